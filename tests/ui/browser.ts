/**
 * Debian's chromium driven by playwright-core, for the dashboard's browser tests and screenshots.
 * Nothing is downloaded: the system browser is used with a fresh profile and no background
 * networking.
 *
 * @module
 */
import { chromium } from "playwright-core";
import type { BrowserContext } from "playwright-core";
import { discoverStores } from "../../src/ui/source.ts";
import { type RunningDashboard, serveDashboard } from "../../src/ui/server.ts";

/** Where the browser is (Debian's `chromium` package). */
export const CHROMIUM = Deno.env.get("STEPFLOW_CHROMIUM") ?? "/usr/bin/chromium";

/** The launch flags the issue asks for: headless, sandbox-less (root in CI), no network chatter. */
export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-quic",
  "--no-first-run",
  "--disable-component-update",
  "--disable-sync",
];

/** Launches chromium with a fresh user-data-dir; closing the context removes the profile. */
export async function launchBrowser(): Promise<BrowserContext & AsyncDisposable> {
  const profile = await Deno.makeTempDir({ prefix: "stepflow-chromium-" });
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    args: CHROMIUM_ARGS,
    headless: true,
    viewport: { width: 1280, height: 900 },
  });
  return Object.assign(context, {
    [Symbol.asyncDispose]: async () => {
      await context.close();
      await Deno.remove(profile, { recursive: true }).catch(() => {});
    },
  });
}

/** Starts the dashboard over a project's stores on a free loopback port. */
export async function startDashboard(
  root: string,
  options: { token?: string; liveIntervalMs?: number } = {},
): Promise<RunningDashboard & AsyncDisposable> {
  const stores = await discoverStores(root);
  const ui = serveDashboard({ source: { cwd: root, stores }, port: 0, ...options });
  return Object.assign(ui, { [Symbol.asyncDispose]: () => ui.close() });
}

/** Whether the browser is installed (tests say how to install it when it is not). */
export function chromiumInstalled(): boolean {
  try {
    return Deno.statSync(CHROMIUM).isFile;
  } catch {
    return false;
  }
}
