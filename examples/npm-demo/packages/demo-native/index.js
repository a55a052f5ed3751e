'use strict';
// The build output written by build.js at install time.
const path = require('path');
const fs = require('fs');

module.exports = JSON.parse(fs.readFileSync(path.join(__dirname, 'build', 'config.json'), 'utf8'));
