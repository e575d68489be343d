'use strict';
// Preloaded into an app by a benchmark (`node --expose-gc --require …`): SIGWINCH (a signal
// Nest's shutdown hooks do not listen to)
// runs a full garbage collection, so memory figures count live objects only.
process.on('SIGWINCH', () => {
  if (typeof global.gc === 'function') global.gc();
});
