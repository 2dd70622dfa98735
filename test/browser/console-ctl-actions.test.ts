import { readFile } from "node:fs/promises";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import type { CatalogExport } from "../../src/protocol/catalog-export.js";
import { renderExport } from "../../src/protocol/catalog-export-yaml.js";
import type { HeadroomView } from "../../src/protocol/console.js";
import type { OriginView } from "../../src/protocol/version-views.js";
import type { GatewayKeyView } from "../../src/protocol/gateway-views.js";
import type { ModelView, ReplicaView, TokenView } from "../../src/protocol/views.js";
import { launchChromium, openSignedIn, seriousViolations, widths, type WatchedPage } from "../support/browser.js";
import { startDemoProcess, stopDemo, type DemoProcess } from "../support/demo-process.js";

/**
 * The ctl actions the console gained a place for, each done in a real
 * headless Chromium the way an operator would (the dialog's dry run, then
 * apply) and checked on the server through the admin API; each disabled,
 * with the reason, for a read-only token.
 */
describe("every llmgw ctl action in the web console", () => {
  let demo: DemoProcess;
  let browser: Browser;
  let readToken: string;
  const opened: WatchedPage[] = [];
  const model = "qwen2.5-7b-instruct";

  async function call<T>(method: string, path: string, body?: unknown, token = demo.token): Promise<T> {
    const response = await fetch(`${demo.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
    return JSON.parse(text) as T;
  }

  const signedIn = (path: string, token = demo.token, size: { width: number; height: number } = widths.desktop): Promise<Page> => openSignedIn(browser, opened, demo.url, path, token, size);

  beforeAll(async () => {
    demo = await startDemoProcess();
    browser = await launchChromium();
    readToken = (await call<{ token: string }>("POST", "/api/v1/tokens", { name: "viewer", role: "read" })).token;
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await stopDemo(demo);
  });

  it("starts a replica by hand on a node (ctl replica start): the server takes no dry run and says so, Apply starts it", async () => {
    const headroom = await call<HeadroomView>("GET", `/api/v1/models/${model}/headroom`);
    const node = headroom.nodes[0]?.node;
    expect(node, `a node with room for another ${model}: ${headroom.reasons.join("; ")}`).toBeTruthy();
    const page = await signedIn(`/models/${model}`);
    await page.locator('[data-action="Start replica"]').click();
    const dialog = page.getByRole("dialog");
    await dialog.getByLabel("node", { exact: true }).click();
    await page.getByRole("option", { name: node as string, exact: true }).click();
    await dialog.getByRole("textbox", { name: /^replica id/ }).fill("by-hand-1");
    await dialog.getByRole("button", { name: "Preview (dry run)" }).click();
    await dialog.getByText("No preview for this change").waitFor();
    // Nothing started by asking.
    expect((await call<{ replicas: ReplicaView[] }>("GET", `/api/v1/replicas?model=${model}`)).replicas.map((replica) => replica.id)).not.toContain("by-hand-1");
    await dialog.getByRole("button", { name: "Apply", exact: true }).click();
    await dialog.getByTestId("follow-state").filter({ hasText: model }).waitFor();
    const started = await call<ReplicaView>("GET", "/api/v1/replicas/by-hand-1");
    expect({ model: started.model, node: started.node }).toEqual({ model, node });
    await page.keyboard.press("Escape");
    await page.getByTestId("replicas-table").locator("tr", { hasText: "by-hand-1" }).waitFor();
  }, 120_000);

  it("lists each node's replicas on the fleet page and stops one there (ctl replicas --node, ctl replica stop)", async () => {
    const started = await call<ReplicaView>("GET", "/api/v1/replicas/by-hand-1");
    const page = await signedIn("/fleet");
    const row = page.getByTestId(`node-replicas-${started.node}`).locator('tr[data-replica="by-hand-1"]');
    await row.waitFor();
    expect(await row.textContent()).toContain(model);
    await row.locator('[data-action="Stop"]').click();
    const dialog = page.getByRole("dialog");
    await dialog.getByRole("button", { name: "Preview (dry run)" }).click();
    expect(await dialog.getByTestId("dry-run").textContent()).toContain(`replica by-hand-1 of ${model} on ${started.node}`);
    expect((await call<ReplicaView>("GET", "/api/v1/replicas/by-hand-1")).state).not.toMatch(/stopped|draining/);
    await dialog.getByRole("button", { name: "Apply", exact: true }).click();
    await dialog.getByTestId("follow").waitFor();
    // A stopped replica is kept as stopped for a while, or dropped: either way it no longer runs.
    const stateNow = () => call<ReplicaView>("GET", "/api/v1/replicas/by-hand-1").then((replica) => replica.state as string, () => "gone");
    await expect.poll(stateNow, { timeout: 60_000 }).toMatch(/^(stopped|gone)$/);
  }, 120_000);

  it("lists every canary with its arms on the overview (ctl model canaries)", async () => {
    await call("POST", "/api/v1/models/llama-3.1-8b/canary", { to: "v2", weight: 10 });
    const page = await signedIn("/");
    const row = page.getByTestId("canaries-table").locator('tr[data-model="llama-3.1-8b"]');
    await row.waitFor();
    expect(await row.textContent()).toMatch(/running.*v2 \(from main\).*10 %.*requests/);
  });

  it("shows and sets a model's origin (ctl model origin) through its dry run", async () => {
    const page = await signedIn(`/models/${model}`);
    await page.locator('[data-action="Origin"]').click();
    const dialog = page.getByRole("dialog");
    const before = await call<OriginView>("GET", `/api/v1/models/${model}/origin`);
    await dialog.getByTestId("origin-now").filter({ hasText: `Now: ${before.origin ?? "(none set)"}` }).waitFor();
    await dialog.getByRole("textbox", { name: /^origin/ }).fill("hf://Qwen/Qwen2.5-7B-Instruct@main");
    await dialog.getByRole("button", { name: "Preview (dry run)" }).click();
    await dialog.getByTestId("dry-run").waitFor();
    expect((await call<OriginView>("GET", `/api/v1/models/${model}/origin`)).origin).toBe(before.origin);
    await dialog.getByRole("button", { name: "Apply", exact: true }).click();
    await dialog.getByTestId("applied").waitFor();
    expect((await call<OriginView>("GET", `/api/v1/models/${model}/origin`)).origin).toBe("hf://Qwen/Qwen2.5-7B-Instruct@main");
  });

  it("lists every followed model against its branch (ctl model updates --all)", async () => {
    const page = await signedIn("/catalog");
    const table = page.getByTestId("updates-table");
    await table.waitFor();
    const expected = (await call<{ models: { model: string }[] }>("GET", "/api/v1/updates")).models.map((row) => row.model).sort();
    expect(expected.length).toBeGreaterThan(0);
    const shown = await table.locator("tbody tr").evaluateAll((rows) => rows.map((row) => row.getAttribute("data-model") ?? ""));
    expect(shown.sort()).toEqual(expected);
  });

  it("downloads the export as the YAML ctl export prints, and a backup that is an SQLite database", async () => {
    const page = await signedIn("/catalog");
    const [exported] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Download the catalog (YAML)" }).click()]);
    expect(exported.suggestedFilename()).toMatch(/^llmgw-catalog-.*\.yaml$/);
    const text = await readFile(await exported.path(), "utf8");
    expect(text).toContain("for `llmgw ctl import`");
    expect(parse(text)).toEqual(await call<CatalogExport>("GET", "/api/v1/catalog/export"));

    const [backup] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Download a backup" }).click()]);
    expect(backup.suggestedFilename()).toMatch(/^llmgw-.*\.db$/);
    const bytes = await readFile(await backup.path());
    expect(bytes.subarray(0, 16).toString("latin1")).toBe("SQLite format 3\u0000");
    await page.getByTestId("backed-up").filter({ hasText: `${bytes.length.toLocaleString("en")} bytes` }).waitFor();
  });

  it("imports a pasted export (ctl import): the dry run lists what it adds and adds nothing, Import adds it and shows the new secrets once", async () => {
    const document: CatalogExport = {
      version: 1,
      models: [{ name: "imported-upstream", external: { base_url: "http://127.0.0.1:9/v1" } }],
      versions: [],
      keys: [{ name: "moved-key", models: null, rpm: 10, tpm: null, expires_at: null, revoked_at: null }],
      tokens: [{ name: "moved-reader", role: "read" }],
    } as CatalogExport;
    const page = await signedIn("/catalog");
    await page.getByTestId("import-yaml").fill("models: [unclosed");
    await page.getByTestId("import-yaml-errors").filter({ hasText: /line 1, column \d+/ }).waitFor();
    // As a file `ctl export` wrote, header and all.
    await page.getByTestId("import-yaml").fill(renderExport(document));
    await page.getByRole("button", { name: "Preview (dry run)" }).click();
    const dryRun = page.getByTestId("dry-run");
    await dryRun.waitFor();
    expect(await dryRun.textContent()).toContain("add the runtime model imported-upstream");
    expect((await call<{ models: ModelView[] }>("GET", "/api/v1/models")).models.map((each) => each.name)).not.toContain("imported-upstream");
    await page.getByRole("button", { name: "Import", exact: true }).click();
    await page.getByTestId("import-result").filter({ hasText: "Models added: imported-upstream" }).waitFor();
    expect(await page.getByTestId("import-secrets-value").textContent()).toMatch(/key moved-key: \S{20,}\nread token moved-reader: \S{20,}/);
    expect((await call<ModelView>("GET", "/api/v1/models/imported-upstream")).name).toBe("imported-upstream");
    expect((await call<{ keys: GatewayKeyView[] }>("GET", "/api/v1/keys")).keys.map((key) => key.name)).toContain("moved-key");
    expect((await call<{ tokens: TokenView[] }>("GET", "/api/v1/tokens")).tokens.map((token) => token.name)).toContain("moved-reader");
  });

  it("disables each of them for a read-only token, naming why", async () => {
    const page = await signedIn(`/models/${model}`, readToken);
    for (const action of ["Start replica", "Origin", "Restart"]) {
      await page.locator(`[data-action="${action}"]`).waitFor();
      expect(await page.locator(`[data-action="${action}"]`).isDisabled(), action).toBe(true);
      expect(await page.locator("[data-disabled-reason]").filter({ has: page.locator(`[data-action="${action}"]`) }).getAttribute("data-disabled-reason")).toMatch(/read-only: changes need an admin token/);
    }
    await page.goto(`${demo.url}/catalog`);
    for (const name of ["Download the catalog (YAML)", "Download a backup"]) {
      const button = page.getByRole("button", { name });
      expect(await button.isDisabled(), name).toBe(true);
      expect(await button.getAttribute("data-disabled-reason")).toMatch(/read-only: changes need an admin token/);
    }
    await page.getByTestId("import-yaml").fill("version: 1\nmodels: []\nversions: []\nkeys: []\ntokens: []\n");
    expect(await page.getByRole("button", { name: "Preview (dry run)" }).isDisabled()).toBe(true);
    expect(await page.getByTestId("read-only-reason").last().textContent()).toMatch(/read-only/);
    // The update check only reads: a read token sees it.
    await page.getByTestId("updates-table").waitFor();
  });

  it("keeps the new page and controls free of console errors and serious accessibility violations", async () => {
    const violations: string[] = [];
    for (const [label, size] of Object.entries(widths)) {
      for (const path of ["/catalog", `/models/${model}`]) {
        const page = await signedIn(path, demo.token, size);
        await page.getByRole("heading", { level: 2 }).first().waitFor();
        await page.waitForFunction('document.querySelector(".mantine-Loader-root") === null', undefined, { timeout: 5_000 }).catch(() => undefined);
        for (const violation of await seriousViolations(page)) violations.push(`${path} at ${label}: ${violation.id}: ${violation.help} ${violation.nodes.slice(0, 3).join(" ")}`);
      }
    }
    // The start dialog open, as an operator sees it.
    const page = await signedIn(`/models/${model}`);
    await page.locator('[data-action="Start replica"]').click();
    await page.getByRole("dialog").waitFor();
    for (const violation of await seriousViolations(page)) violations.push(`start-replica dialog: ${violation.id}: ${violation.help} ${violation.nodes.slice(0, 3).join(" ")}`);
    expect(violations).toEqual([]);
    // A dry run the server refuses on purpose (a hand start) is an answer the page shows; the browser logs its status all the same.
    const refusedDryRun = /Failed to load resource: the server responded with a status of 4\d\d .*\/api\/v1\/.*[?&]dry_run=true/;
    expect(opened.flatMap((watched) => watched.errors).filter((error) => !refusedDryRun.test(error))).toEqual([]);
  }, 300_000);
});
