/**
 * Debian's chromium driven by playwright-core, for the dashboard's browser tests and screenshots.
 * Nothing is downloaded: the system browser is used with a fresh profile and no background
 * networking.
 *
 * @module
 */
import { chromium } from "playwright-core";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { discoverStores, type NamedStore } from "../../src/ui/source.ts";
import {
  type RunningDashboard,
  serveDashboard,
  type ServeDashboardOptions,
} from "../../src/ui/server.ts";

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

/**
 * Launches chromium (playwright gives it a fresh temp profile and removes it on close). A launch
 * costs 1-2 s of CPU: launch once and open a {@linkcode openTab} per check.
 */
export async function launchBrowser(): Promise<Browser & AsyncDisposable> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: CHROMIUM_ARGS,
    headless: true,
  });
  return Object.assign(browser, { [Symbol.asyncDispose]: () => browser.close() });
}

/** A page and the page errors it saw. */
export interface Tab extends AsyncDisposable {
  /** The page (1280 × 900). */
  page: Page;
  /** Uncaught errors of the page's scripts (`pageerror`), in order. */
  errors: string[];
}

/** The one context of each browser (see {@linkcode openTab}). */
const contexts = new WeakMap<Browser, Promise<BrowserContext>>();

/**
 * Opens a page (a tab) in the browser's one context; disposing it closes the page. Each context
 * of headless chromium is a window of its own, with its own renderer for the browser's UI (~0.9 s
 * of CPU each); the dashboard keeps no cookies or storage, so the checks share one.
 */
export async function openTab(browser: Browser): Promise<Tab> {
  let context = contexts.get(browser);
  if (!context) {
    context = browser.newContext({ viewport: { width: 1280, height: 900 } });
    contexts.set(browser, context);
  }
  const page = await (await context).newPage();
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(e.message));
  return { page, errors, [Symbol.asyncDispose]: () => page.close() };
}

/**
 * Starts the dashboard on a free loopback port over a project's stores (by default every store
 * `deno task ui` finds there); disposing it stops the server.
 */
export async function startDashboard(
  root: string,
  options: Omit<ServeDashboardOptions, "source" | "port"> & { stores?: NamedStore[] } = {},
): Promise<RunningDashboard & AsyncDisposable> {
  const { stores = await discoverStores(root), ...rest } = options;
  const ui = serveDashboard({ ...rest, source: { cwd: root, stores }, port: 0 });
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

let watchers = 0;

/**
 * Reports the text of the first element matching `selector` once it has some — call it BEFORE the
 * click that makes it appear. The dashboard shows an action's answer and reloads the page a second
 * later; waiting for the element and then reading it can miss that second on a busy machine
 * (selector polling is paced by animation frames). A MutationObserver in the page hands the text
 * over in the instant it is set.
 */
export async function textOnceShown(
  page: Page,
  selector: string,
  timeout = 60_000, // a failure cap: an action starts a CLI process, slow to start on a loaded machine
): Promise<() => Promise<string>> {
  const name = `__stepflowShown${++watchers}`;
  const shown = Promise.withResolvers<string>();
  await page.exposeFunction(name, (text: string) => shown.resolve(text));
  await page.evaluate(([selector, name]) => {
    const page = globalThis as unknown as PageGlobals;
    const report = () => {
      const text = page.document.querySelector(selector)?.textContent;
      if (!text) return false;
      observer.disconnect();
      (page[name] as (text: string) => void)(text);
      return true;
    };
    const observer = new page.MutationObserver(report);
    if (!report()) {
      observer.observe(page.document, {
        subtree: true,
        childList: true,
        attributes: true,
        characterData: true,
      });
    }
  }, [selector, name]);
  return async () => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`${selector} did not show any text within ${timeout} ms`)),
        timeout,
      );
    });
    try {
      return await Promise.race([shown.promise, late]);
    } finally {
      clearTimeout(timer);
    }
  };
}

/** The part of a page's globals {@linkcode textOnceShown} uses (tests type-check without DOM). */
interface PageGlobals {
  [name: string]: unknown;
  document: { querySelector(selector: string): { textContent: string | null } | null };
  MutationObserver: new (callback: () => void) => {
    observe(target: unknown, options: Record<string, boolean>): void;
    disconnect(): void;
  };
}
