'use strict';
module.exports = require('./state.json');
