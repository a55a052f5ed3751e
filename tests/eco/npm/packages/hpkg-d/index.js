'use strict';
module.exports = require('./generated.js');
