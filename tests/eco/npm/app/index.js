'use strict';
// The project that installs the five hpkg-* packages (package.json is written by the test:
// its dependencies and allowScripts name the tarballs by the project's absolute path).
for (const name of ['hpkg-a', 'hpkg-b', 'hpkg-c', 'hpkg-d', 'hpkg-e']) {
  console.log(name, JSON.stringify(require(name)));
}
