/**
 * `npm run bench -- console`: the web console in headless Chromium against a
 * server holding 2,000 models: the gzipped JavaScript the first page loads,
 * and the time from opening /models until the table shows all 2,000 and its
 * first rows (the page usable), median of a few loads on this machine.
 */
import { spawn } from "node:child_process";
import { createHash, randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { chromium } from "playwright-core";
import { packageRoot } from "../src/package-root.js";
import { insertModelEntry } from "../src/store/model-rows.js";
import { openStore } from "../src/store/open-store.js";
import { insertToken } from "../src/store/token-rows.js";

export interface ConsoleBenchReport {
  readonly models: number;
  readonly first_page_js_gzip_bytes: number;
  readonly first_page_js_files: number;
  readonly models_page_usable_ms: readonly number[];
  readonly models_page_usable_median_ms: number;
  readonly markdown: string;
}

const consoleDirectory = path.join(packageRoot.directory, "dist", "console");

function gzipSizeOf(assetPath: string): number {
  const file = path.join(consoleDirectory, assetPath);
  return existsSync(`${file}.gz`) ? statSync(`${file}.gz`).size : statSync(file).size;
}

export async function consoleBench(models = 2000, loads = 5): Promise<ConsoleBenchReport> {
  if (!existsSync(path.join(consoleDirectory, "index.html"))) throw new Error("dist/console is not built: `npm run build` first");
  const dataDir = mkdtempSync(path.join(tmpdir(), "llmgw-bench-console-"));
  const token = `llmgw_admin_bench${randomUUID().replaceAll("-", "")}`;
  // Written straight to the store: adding 2,000 models through the API would time the catalog's checks, not the page.
  const store = await openStore({ database: undefined, dataDir });
  const at = new Date().toISOString();
  await store.db.transaction().execute(async (transaction) => {
    for (let index = 0; index < models; index += 1) {
      await insertModelEntry(
        transaction,
        {
          name: `bench-model-${index}`,
          context: 8192,
          owner: `team-${index % 20}`,
          profiles: [{ name: "default", engine: index % 3 === 0 ? "llamacpp" : "vllm", source: `hf://bench/model-${index}@main`, gpus: 1 + (index % 4), gpu_class: "h100" }],
        } as Parameters<typeof insertModelEntry>[1],
        at,
      );
    }
  });
  await store.db.updateTable("catalog_revision").set((eb) => ({ revision: eb("revision", "+", 1) })).where("id", "=", 1).execute();
  await insertToken(store.db, { id: randomUUID(), name: "bench-admin", role: "admin", hash: createHash("sha256").update(token).digest("hex") }, at);
  await store.close();

  const server = spawn(process.execPath, [path.join(packageRoot.directory, "bin", "llmgw.js"), "server", "--data-dir", dataDir, "--listen", "127.0.0.1:0", "--log-level", "info"], { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  server.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  server.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const browser = await chromium.launch({
    executablePath: process.env.LLMGW_CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  try {
    let url: string | undefined;
    for (let attempt = 0; attempt < 300 && !url; attempt += 1) {
      url = /(http:\/\/127\.0\.0\.1:\d+)/.exec(output)?.[1];
      if (!url) await sleep(100);
    }
    if (!url) throw new Error(`the server did not say where it listens:\n${output}`);
    for (let attempt = 0; ; attempt += 1) {
      if (await fetch(`${url}/healthz`).then((answer) => answer.ok, () => false)) break;
      if (attempt > 300) throw new Error(`the server did not start:\n${output}`);
      await sleep(100);
    }

    // The first page: every script it loads, counted as the precompressed file the server sends.
    const first = await browser.newPage();
    const scripts = new Set<string>();
    first.on("response", (response) => {
      const pathname = new URL(response.url()).pathname;
      if (pathname.endsWith(".js")) scripts.add(pathname.slice(1));
    });
    await first.goto(`${url}/#token=${token}`);
    await first.getByRole("heading", { name: "Overview" }).waitFor({ timeout: 60_000 });
    // Its figures drawn means its code has all loaded. Not "networkidle": the page keeps the server's
    // live-change stream open, so the network is never idle and that wait ran out at 30 s.
    await first.getByTestId("nodes-ready").waitFor({ timeout: 60_000 });
    await first.waitForLoadState("load");
    const firstPageBytes = [...scripts].reduce((sum, file) => sum + gzipSizeOf(file), 0);
    await first.close();

    const timings: number[] = [];
    for (let load = 0; load < loads; load += 1) {
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      const page = await context.newPage();
      const started = Date.now();
      await page.goto(`${url}/models#token=${token}`);
      await page.getByTestId("models-count").filter({ hasText: `${models} of ${models} models` }).waitFor({ timeout: 60_000 });
      await page.locator("tr[data-model]").first().waitFor();
      timings.push(Date.now() - started);
      await context.close();
    }
    const sorted = [...timings].sort((a, b) => a - b);
    const median = sorted[Math.floor(sorted.length / 2)] ?? 0;
    const markdown = [
      "## The web console",
      "",
      `Headless Chromium (${browser.version()}) against \`llmgw server\` with ${models.toLocaleString("en")} models.`,
      "",
      "| measure | value |",
      "| --- | ---: |",
      `| JavaScript of the first page (gzipped, ${scripts.size} files) | ${(firstPageBytes / 1024).toFixed(1)} KB |`,
      `| /models usable with ${models.toLocaleString("en")} models (opened → all counted and the first rows drawn), median of ${loads} | ${median} ms |`,
      `| each load | ${timings.join(", ")} ms |`,
    ].join("\n");
    return { models, first_page_js_gzip_bytes: firstPageBytes, first_page_js_files: scripts.size, models_page_usable_ms: timings, models_page_usable_median_ms: median, markdown };
  } finally {
    await browser.close();
    server.kill("SIGTERM");
    await new Promise((resolve) => server.once("exit", resolve));
    rmSync(dataDir, { recursive: true, force: true });
  }
}
