'use strict';
// postinstall of demo-util: check that its dependency is installed and record a stamp.
// npm runs the install scripts of one install side by side (npm 9: as many at once as the
// machine has CPUs; npm 11: one fewer) and not in dependency order, so this script must not
// need demo-native's postinstall to have run: it reads demo-native's package.json, which npm
// unpacks before any install script starts, not demo-native's build output.
const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');

const native = require('demo-native/package.json');
const when = execFileSync('sh', ['-c', 'echo ok'], { encoding: 'utf8' }).trim();
fs.writeFileSync(path.join(__dirname, 'stamp.txt'), `demo-native ${native.version} ${when}\n`);
console.log(`demo-util: demo-native ${native.version} is installed`);
