'use strict';
const fs = require('fs');
const path = require('path');

module.exports = fs.readFileSync(path.join(__dirname, 'build', 'Release', 'hpkg_a.node'), 'utf8').trim();
