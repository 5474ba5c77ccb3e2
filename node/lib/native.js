'use strict';
// The addon: the host crate built for Node (src/, napi-rs). One build per
// platform; this package ships Linux x86_64's.
const { platform, arch } = process;

function load() {
  if (platform !== 'linux' || arch !== 'x64') {
    throw new Error(
      `s3-lease: no native build for ${platform}-${arch} in this package (it ships linux-x64; ` +
        'see its docs for building one from source with cargo)',
    );
  }
  return require('../s3-lease.linux-x64-gnu.node');
}

module.exports = load();
