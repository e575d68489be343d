'use strict';
// Whether a process itself listens on a TCP port (Linux /proc). npm start's health checks use it: another
// instance holding the port would answer /healthz for an app that cannot listen, and hide its failure.
const fs = require('node:fs');

/** Inodes of the sockets listening on `port` (any address, IPv4 or IPv6); undefined where /proc cannot tell. */
function listeningInodes(port) {
  const inodes = new Set();
  let read = false;
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text;
    try {
      text = fs.readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    read = true;
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      // local_address is ADDR:PORT in hex; state 0A is LISTEN; the inode is the tenth field.
      if (f.length > 9 && f[3] === '0A' && parseInt(f[1].split(':').pop(), 16) === port) inodes.add(f[9]);
    }
  }
  return read ? inodes : undefined;
}

/** True when process `pid` holds a socket listening on `port` (also true where /proc is missing: nothing to check). */
function listensOn(pid, port) {
  const inodes = listeningInodes(port);
  if (!inodes) return true;
  let fds;
  try {
    fds = fs.readdirSync(`/proc/${pid}/fd`);
  } catch {
    return false;
  }
  return fds.some((fd) => {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${pid}/fd/${fd}`));
      return Boolean(m && inodes.has(m[1]));
    } catch {
      return false;
    }
  });
}

module.exports = { listensOn };
