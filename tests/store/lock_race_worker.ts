/**
 * A racer of the lock race test (tests/store/lock_test.ts): waits at a barrier shared with the
 * other racers, then tries to take the plan lock at the same instant as they do.
 */
import { acquireFileLock, type HeldFileLock, planLockSubject } from "../../src/store/file_lock.ts";

/** The worker's global scope (the default type checking sees a window). */
const scope = self as unknown as {
  onmessage: ((event: MessageEvent) => void) | null;
  postMessage(message: unknown): void;
};

let held: HeldFileLock | undefined;
scope.onmessage = (event: MessageEvent) => {
  const message = event.data as { race?: { path: string; barrier: SharedArrayBuffer } };
  if (!message.race) {
    held?.release();
    held = undefined;
    scope.postMessage({ released: true });
    return;
  }
  const barrier = new Int32Array(message.race.barrier);
  scope.postMessage({ ready: true });
  Atomics.wait(barrier, 0, 0);
  try {
    held = acquireFileLock(message.race.path, "racer", {
      staleAfterMs: 60_000,
      onWarning: () => {},
      subject: planLockSubject(message.race.path.slice(0, -".lock".length)),
    });
    scope.postMessage({ won: true });
  } catch (error) {
    scope.postMessage({ won: false, code: (error as { code?: string }).code });
  }
};
