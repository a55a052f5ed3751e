'use strict';
// install of hpkg-d: generates generated.js from a template and its own package.json.
const fs = require('fs');
const path = require('path');

const pkg = require('./package.json');
const tpl = fs.readFileSync(path.join(__dirname, 'template.txt'), 'utf8');
fs.writeFileSync(path.join(__dirname, 'generated.js'), tpl.replace('@VERSION@', pkg.version));
console.log(`hpkg-d: generated for ${pkg.version}`);
