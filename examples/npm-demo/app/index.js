'use strict';
console.log(require('demo-util').describe());
