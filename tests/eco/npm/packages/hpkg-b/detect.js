'use strict';
// postinstall of hpkg-b: asks the shell about the machine, like prebuild-install's platform
// checks, and writes what it found next to itself.
const { execSync } = require('child_process');
const fs = require('fs');
const path = require('path');

const [kernel, machine] = execSync('uname -s; uname -m', { encoding: 'utf8' }).trim().split('\n');
fs.writeFileSync(path.join(__dirname, 'detected.json'), JSON.stringify({ kernel, machine }) + '\n');
console.log(`hpkg-b: ${kernel} ${machine}`);
