import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admin } from "../client/admin-calls.js";
import { ApiClient } from "../client/api-client.js";
import { startServer, type RunningServer } from "../server/start-server.js";
import { gatewayTryLines } from "./gateway-try-lines.js";

/** The printed curl lines pasted into bash, with LLMGW_KEY as the person exported it; the HTTP status it got. */
/** Asynchronous: the server answering it runs in this process. */
async function pasteCurl(lines: string[], key: string): Promise<string> {
  const curl = lines.filter((line) => !line.includes("checks keys")).slice(0, 2).join("\n").replace("curl -sN", "curl -s -o /dev/null -w '%{http_code}'");
  return (await promisify(execFile)("bash", ["-c", curl], { encoding: "utf8", env: { ...process.env, LLMGW_KEY: key } })).stdout;
}

describe("the curl printed after ctl model serve", () => {
  const servers: RunningServer[] = [];
  const folders: string[] = [];
  const start = async (gatewayAuth: "keys" | "open") => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), "llmgw-try-lines-"));
    folders.push(dataDir);
    const server = await startServer({ dataDir, listen: "127.0.0.1:0", logger: false, gatewayAuth });
    servers.push(server);
    return { server, client: new ApiClient(server.url, server.createdAdminToken?.token ?? "") };
  };
  let keyed: Awaited<ReturnType<typeof start>>;
  let open: Awaited<ReturnType<typeof start>>;
  beforeAll(async () => {
    keyed = await start("keys");
    open = await start("open");
  });
  afterAll(async () => {
    for (const server of servers) await server.close();
    for (const folder of folders) await rm(folder, { recursive: true, force: true });
  });

  it("knows whether the gateway checks keys by asking it", async () => {
    expect(await keyed.client.gatewayChecksKeys()).toBe(true);
    expect(await open.client.gatewayChecksKeys()).toBe(false);
  });

  it("on a gateway that checks keys, sends the key and says how to make one, so it is not refused 401", async () => {
    const lines = gatewayTryLines(keyed.server.url, "chat-7b", true);
    expect(lines[0]).toContain("llmgw ctl key create NAME --models chat-7b");
    const { key } = await keyed.client.send(admin.createKey({ name: "try" }));
    // No such model here: past the key check, the gateway says so (404), where a line without the key gets 401.
    expect(await pasteCurl(lines, key)).toBe("404");
    expect(await pasteCurl(gatewayTryLines(keyed.server.url, "chat-7b", false), key)).toBe("401");
  });

  it("on an open gateway, is the line without a key", () => {
    expect(gatewayTryLines(open.server.url, "chat-7b", false).join("\n")).not.toContain("authorization");
  });
});
