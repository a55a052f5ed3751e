'use strict';
module.exports = require('hpkg-a');
