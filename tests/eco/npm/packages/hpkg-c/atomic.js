'use strict';
// postinstall of hpkg-c: write-file-atomic's way of writing a file: the content goes to
// `FILE.<random uint32>` next to it, which is then renamed over FILE.
const crypto = require('crypto');
const fs = require('fs');
const path = require('path');

function writeAtomic(file, data) {
  const tmp = `${file}.${crypto.randomBytes(4).readUInt32LE(0)}`;
  fs.writeFileSync(tmp, data);
  fs.renameSync(tmp, file);
}

writeAtomic(path.join(__dirname, 'state.json'), JSON.stringify({ installed: true }) + '\n');
console.log('hpkg-c: state written');
