/**
 * The one table of exit codes shared by every stepflow command line. Each CLI uses the subset that
 * applies to it (its `--help` lists them); a code never means two different things.
 *
 * @module
 */

/** Exit codes of every stepflow CLI. */
export const EXIT_CODES: Readonly<{
  success: 0;
  failed: 1;
  usage: 2;
  incomplete: 3;
  waiting: 4;
  budgetExceeded: 5;
  internal: 70;
  locked: 75;
  interrupted: 130;
  terminated: 143;
}> = Object.freeze({
  /** The command did what was asked (a run completed). */
  success: 0,
  /** The command ran and did not succeed (a flow, plan or script failed). */
  failed: 1,
  /**
   * Usage error (bad flag, missing argument), invalid input (definition, plan, script), or a
   * backend that cannot be used at all (missing or refused credentials, SDK not installed).
   */
  usage: 2,
  /**
   * A person said no, so the work was not all done: `run-plan` — every step ended, but some were
   * skipped because approval was not given; `run-agent` — a person's answer at an input step
   * stopped the run (it ended `declined`).
   */
  incomplete: 3,
  /**
   * `run-agent`: the run waits for an answer at an input step and nobody is at a terminal to give
   * it; the run is recorded and is answered with `--answer RUN_ID --value '<json>'`.
   */
  waiting: 4,
  /**
   * `run-agent`: the run's budget is spent (`budget_exceeded`); the run is recorded and stays
   * resumable: `--resume RUN_ID --budget-usd N` raises the budget and carries on inside the step.
   */
  budgetExceeded: 5,
  /** An unexpected internal error: a bug in stepflow (EX_SOFTWARE). */
  internal: 70,
  /** Another process holds the lock of the file (EX_TEMPFAIL: try again later). */
  locked: 75,
  /** Cancelled with Ctrl-C (128 + SIGINT). */
  interrupted: 130,
  /**
   * Cancelled with SIGTERM (128 + SIGTERM: `timeout`, `kill`, systemd, Docker, CI): the same clean
   * stop as Ctrl-C.
   */
  terminated: 143,
});

/** One of {@linkcode EXIT_CODES}. */
export type ExitCode = typeof EXIT_CODES[keyof typeof EXIT_CODES];
