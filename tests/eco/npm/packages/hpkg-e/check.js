'use strict';
// postinstall of hpkg-e: loads its dependency (built just before) and records a stamp.
const fs = require('fs');
const path = require('path');

const built = require('hpkg-a');
fs.writeFileSync(path.join(__dirname, 'stamp.txt'), `${built} ok\n`);
console.log('hpkg-e: hpkg-a is built');
