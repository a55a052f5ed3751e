'use strict';
// postinstall of demo-util (runs after its dependency's postinstall): load the dependency built just before and record a stamp.
const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');

const native = require('demo-native');
const when = execFileSync('sh', ['-c', 'echo ok'], { encoding: 'utf8' }).trim();
fs.writeFileSync(path.join(__dirname, 'stamp.txt'), `${native.arch} ${when}\n`);
console.log(`demo-util: demo-native is built for ${native.arch}`);
