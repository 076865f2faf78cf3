/**
 * A racer of the lock race test (tests/store/lock_test.ts): waits at a barrier shared with the
 * other racers, then tries to take the plan lock at the same instant as they do.
 */
import { acquireFileLock, type HeldFileLock, planLockSubject } from "../../src/store/file_lock.ts";

let held: HeldFileLock | undefined;
self.onmessage = (event: MessageEvent) => {
  const message = event.data as { race?: { path: string; barrier: SharedArrayBuffer } };
  if (!message.race) {
    held?.release();
    held = undefined;
    self.postMessage({ released: true });
    return;
  }
  const barrier = new Int32Array(message.race.barrier);
  self.postMessage({ ready: true });
  Atomics.wait(barrier, 0, 0);
  try {
    held = acquireFileLock(message.race.path, "racer", {
      staleAfterMs: 60_000,
      onWarning: () => {},
      subject: planLockSubject(message.race.path.slice(0, -".lock".length)),
    });
    self.postMessage({ won: true });
  } catch (error) {
    self.postMessage({ won: false, code: (error as { code?: string }).code });
  }
};
