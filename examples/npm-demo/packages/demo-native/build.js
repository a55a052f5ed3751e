'use strict';
// postinstall of demo-native: what a native-addon build does, in miniature. It probes the
// machine through shell children, compiles in a private scratch directory made with
// mkdtemp, writes its output into its own package directory, and cleans up.
const { execFileSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

const sh = (script) => execFileSync('sh', ['-c', script], { encoding: 'utf8' }).trim();

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'demo-'));
try {
  const arch = sh('uname -m');
  // A "compile" step in the scratch directory: generate a source, transform it with sed.
  fs.writeFileSync(path.join(scratch, 'config.in'), `arch=@ARCH@\nnode=@NODE@\n`);
  sh(`sed -e 's/@ARCH@/${arch}/' -e 's/@NODE@/${process.versions.node}/' ` +
     `"${scratch}/config.in" > "${scratch}/config.out"`);
  const pairs = fs.readFileSync(path.join(scratch, 'config.out'), 'utf8')
    .split('\n').filter(Boolean).map((l) => l.split('='));
  const out = path.join(__dirname, 'build');
  fs.mkdirSync(out, { recursive: true });
  fs.writeFileSync(path.join(out, 'config.json'),
    JSON.stringify(Object.fromEntries(pairs), null, 2) + '\n');
  console.log(`demo-native: built for ${arch}`);
} finally {
  fs.rmSync(scratch, { recursive: true, force: true });
}
