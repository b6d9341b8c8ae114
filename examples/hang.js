'use strict';
// A process that hangs: the main thread blocks in Atomics.wait for a worker's
// answer, but it only tells the worker to start once the worker's 'online'
// event arrives, which needs the main thread's event loop, which is blocked.
// Both threads sleep forever and no CPU is used.
// Run it with `node examples/hang.js &`, then `gcore PID` (or attach gdb/lldb).
const { Worker, isMainThread, workerData, parentPort } = require('worker_threads');

if (isMainThread) {
  const shared = new Int32Array(new SharedArrayBuffer(4));
  const worker = new Worker(__filename, { workerData: shared });
  worker.on('online', () => worker.postMessage('start'));
  function awaitAnswer(flag) {
    Atomics.wait(flag, 0, 0);
    return flag[0];
  }
  function start() {
    console.log(`pid ${process.pid}: waiting for the worker`);
    return awaitAnswer(shared);
  }
  start();
} else {
  parentPort.once('message', function onStart() {
    Atomics.store(workerData, 0, 1);
    Atomics.notify(workerData, 0);
  });
}
