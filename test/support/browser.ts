import { mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { packageRoot } from "../../src/package-root.js";

/** Debian's chromium; `npx playwright install` cannot download here, and CI installs the package (.ci/run). */
export const chromiumPath = process.env.LLMGW_CHROMIUM ?? "/usr/bin/chromium";

export const screenshotFolder = path.join(packageRoot.directory, "test-results", "screenshots");

export const widths = { desktop: { width: 1280, height: 900 }, phone: { width: 390, height: 844 } } as const;

export async function launchChromium(): Promise<Browser> {
  // Playwright gives each launch a fresh profile folder of its own (the --user-data-dir), removed at close.
  return chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
}

/** A page that records every console error and uncaught exception, for the test to assert there are none. */
export interface WatchedPage {
  readonly page: Page;
  readonly context: BrowserContext;
  readonly errors: string[];
}

export async function openPage(browser: Browser, size: { width: number; height: number } = widths.desktop): Promise<WatchedPage> {
  const context = await browser.newContext({ viewport: size });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on("console", (message) => {
    if (message.type() === "error") errors.push(`console: ${message.text()} (${message.location().url})`);
  });
  page.on("pageerror", (error) => errors.push(`page: ${error.message}`));
  return { page, context, errors };
}

/**
 * A watched page of the console at `path`, signed in by the login link (the
 * token in the URL fragment, as `llmgw demo` prints it), once the header
 * offers to log out. `opened` collects it, for the test to check its
 * errors and close it.
 */
export async function openSignedIn(
  browser: Browser,
  opened: WatchedPage[],
  consoleUrl: string,
  path: string,
  token: string,
  size: { width: number; height: number } = widths.desktop,
): Promise<Page> {
  const watched = await openPage(browser, size);
  opened.push(watched);
  await watched.page.goto(`${consoleUrl}${path}#token=${encodeURIComponent(token)}`);
  // Log out is shown at every width; the name of who is signed in is hidden on a phone.
  await watched.page.getByRole("button", { name: "Log out" }).waitFor();
  return watched.page;
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

export interface AxeViolation {
  readonly id: string;
  readonly impact: string | null;
  readonly help: string;
  readonly nodes: string[];
}

/** axe-core run inside the page: the serious and critical violations, each with where it is. */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  // Evaluated over the devtools protocol, which the page's Content-Security-Policy (no inline script) does not govern.
  await page.evaluate(axeSource);
  return page.evaluate(async () => {
    // axe is the global the script tag defines; its types are not in this page's scope.
    const axe = (globalThis as unknown as { axe: { run: (context: unknown, options: object) => Promise<{ violations: { id: string; impact: string | null; help: string; nodes: { target: unknown[] }[] }[] }> } }).axe;
    const result = await axe.run((globalThis as unknown as { document: unknown }).document, { resultTypes: ["violations"] });
    return result.violations
      .filter((violation) => violation.impact === "serious" || violation.impact === "critical")
      .map((violation) => ({ id: violation.id, impact: violation.impact, help: violation.help, nodes: violation.nodes.map((node) => JSON.stringify(node.target)) }));
  });
}

export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(screenshotFolder, { recursive: true });
  const file = path.join(screenshotFolder, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}
