'use strict';
const native = require('demo-native');

module.exports = { describe: () => `built for ${native.arch} with node ${native.node}` };
