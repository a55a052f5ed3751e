'use strict';
module.exports = require('./detected.json');
