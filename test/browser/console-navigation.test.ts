import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium, openSignedIn, seriousViolations, widths, type WatchedPage } from "../support/browser.js";
import { startDemoProcess, stopDemo, type DemoProcess } from "../support/demo-process.js";

/**
 * The console walked as a person walks it: from page to page by the side
 * navigation's links, the link just clicked keeping the focus (and the
 * pointer resting on it), with axe-core run after each click. Opening each
 * page by its address, as the screenshot pass does, never shows the active
 * link in this state. On a phone the drawer slides away as the page
 * changes, so there the active link is checked again in the drawer opened
 * once more.
 */
describe("the console's side navigation, clicked through", () => {
  let demo: DemoProcess;
  let browser: Browser;
  const opened: WatchedPage[] = [];

  /** The label of each link in the side navigation, in the order it lists them, and the address it leads to. */
  const links = [
    ["Fleet", "/fleet"],
    ["Models", "/models"],
    ["Plan and add", "/plan"],
    ["Playground", "/playground"],
    ["Keys and usage", "/keys"],
    ["Access", "/access"],
    ["Catalog", "/catalog"],
    ["Events", "/events"],
    ["Audit", "/audit"],
    ["Overview", "/"],
  ] as const;

  beforeAll(async () => {
    demo = await startDemoProcess();
    browser = await launchChromium();
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await stopDemo(demo);
  });

  /** On a phone the side navigation is a drawer, off the screen until the burger in the header opens it; the burger closes it too. */
  async function toggleDrawer(page: Page, open: boolean): Promise<void> {
    await page.getByRole("button", { name: "Toggle the page list" }).click();
    await drawerShown(page, open);
  }

  /** Waits for the drawer to finish sliding in (its left edge on the screen's) or out (its right edge at or before it). */
  async function drawerShown(page: Page, shown: boolean): Promise<void> {
    const navigation = page.getByRole("navigation", { name: "Pages" });
    await expect
      .poll(async () => {
        const { left, right } = await navigation.evaluate((element) => {
          const box = element.getBoundingClientRect();
          return { left: box.left, right: box.right };
        });
        return shown ? left === 0 : right <= 0;
      })
      .toBe(true);
  }

  for (const [label, size] of Object.entries(widths)) {
    it(`keeps every page free of serious accessibility violations at ${size.width} px while the link just clicked has the focus`, async () => {
      const narrow = label === "phone";
      const page = await openSignedIn(browser, opened, demo.url, "/", demo.token, size);
      const violations: string[] = [];
      for (const [name, path] of links) {
        if (narrow) await toggleDrawer(page, true);
        const link = page.getByRole("navigation", { name: "Pages" }).getByRole("link", { name, exact: true });
        await link.click();
        await page.waitForURL((url) => url.pathname === path);
        // The state under test: the clicked link is the page's active link and still holds the focus.
        await link.and(page.locator("[data-active]")).waitFor();
        await page.getByRole("heading", { level: 2 }).first().waitFor();
        await page.waitForFunction('document.querySelector(".mantine-Loader-root") === null', undefined, { timeout: 5_000 }).catch(() => undefined);
        expect(await link.evaluate((element) => element === element.ownerDocument.activeElement), `${name} focused`).toBe(true);
        for (const violation of await seriousViolations(page)) violations.push(`${path} at ${label}: ${violation.id} (${violation.impact}): ${violation.help} ${violation.nodes.slice(0, 3).join(" ")}`);
        if (!narrow) continue;
        // The drawer closes as the page changes, taking the focused link off the screen; opened again, it shows the page's link active.
        await drawerShown(page, false);
        await toggleDrawer(page, true);
        for (const violation of await seriousViolations(page)) violations.push(`${path} at ${label}, the drawer open again: ${violation.id} (${violation.impact}): ${violation.help} ${violation.nodes.slice(0, 3).join(" ")}`);
        await toggleDrawer(page, false);
      }
      expect(violations).toEqual([]);
      expect(opened.flatMap((watched) => watched.errors)).toEqual([]);
    }, 300_000);
  }
});
