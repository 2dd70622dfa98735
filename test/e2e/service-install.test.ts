import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { llmgwBin, runCli } from "../support/processes.js";
import { temporaryDirectory } from "../support/temporary-directory.js";

/**
 * `llmgw service install` as an operator runs it: each face's unit passes
 * `systemd-analyze verify` (Debian's systemd package; .ci/run installs it),
 * and each mistake is refused with what to do, writing nothing.
 */

let directory: string;
let envFile: string;

beforeAll(() => {
  directory = temporaryDirectory("llmgw-service-install-");
  envFile = path.join(directory, "llmgw.env");
  writeFileSync(envFile, "LLMGW_SERVER=http://127.0.0.1:8080\n", { mode: 0o600 });
});


/** systemd-analyze exits 0 on a unit with bad values and only warns: a clean unit is one that prints nothing. */
function verify(unitFile: string): { status: number | null; output: string } {
  const result = spawnSync("systemd-analyze", ["verify", unitFile], { encoding: "utf8" });
  return { status: result.status, output: `${result.stdout}${result.stderr}`.trim() };
}

describe("llmgw service install", () => {
  it.each(["server", "agent", "gateway"])("writes a %s unit that systemd-analyze verify passes without a warning", async (face) => {
    const unitDir = path.join(directory, `units-${face}`);
    const result = await runCli(["service", "install", face, "--user", "root", "--environment-file", envFile, "--data-dir", path.join(directory, `${face}-data`), "--unit-dir", unitDir, "--", "--listen", "127.0.0.1:0"]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const unitFile = path.join(unitDir, `llmgw-${face}.service`);
    expect(result.stdout).toContain(`Wrote ${unitFile}.`);
    expect(result.stdout).toContain(`systemctl enable --now llmgw-${face}.service`);
    expect(verify(unitFile)).toEqual({ status: 0, output: "" });
    const unit = readFileSync(unitFile, "utf8");
    expect(unit).toContain(`ExecStart=${process.execPath} ${llmgwBin} ${face}`);
    expect(statSync(unitFile).mode & 0o777).toBe(0o644);
  });

  it("would fail verify on a unit with a bad value, so a clean verify means something", () => {
    const unitFile = path.join(directory, "units-agent", "llmgw-agent.service");
    const broken = path.join(directory, "llmgw-broken.service");
    writeFileSync(broken, readFileSync(unitFile, "utf8").replace(/^LimitNOFILE=.*$/m, "LimitNOFILE=lots"));
    expect(verify(broken).output).toContain("Failed to parse resource value, ignoring: lots");
  });

  it("prints the unit with --print and writes nothing", async () => {
    const unitDir = path.join(directory, "printed");
    const result = await runCli(["service", "install", "agent", "--print", "--environment-file", envFile, "--unit-dir", unitDir]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^# Written by `llmgw service install`/);
    expect(result.stdout).toContain("KillMode=process");
    expect(result.stdout).toContain("StateDirectory=llmgw-agent");
    expect(existsSync(unitDir)).toBe(false);
  });

  it("refuses a face llmgw does not run", async () => {
    const result = await runCli(["service", "install", "ctl", "--print"]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('"ctl" is not a service llmgw runs');
    expect(result.stderr).toContain("server, agent, gateway");
  });

  it("refuses an environment file that does not exist, saying what to put in it", async () => {
    const missing = path.join(directory, "nowhere.env");
    const unitDir = path.join(directory, "never");
    const result = await runCli(["service", "install", "agent", "--environment-file", missing, "--unit-dir", unitDir]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(`the environment file ${missing} does not exist`);
    expect(result.stderr).toContain("LLMGW_JOIN_TOKEN");
    expect(existsSync(unitDir)).toBe(false);
  });

  it("refuses an environment file every user can read", async () => {
    const open = path.join(directory, "open.env");
    writeFileSync(open, "LLMGW_TOKEN=secret\n");
    chmodSync(open, 0o644);
    const result = await runCli(["service", "install", "gateway", "--environment-file", open, "--unit-dir", path.join(directory, "never")]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(`${open} is readable by every user`);
    expect(result.stderr).toContain(`chmod 0600 ${open}`);
  });

  it("refuses a secret among the face's arguments", async () => {
    const result = await runCli(["service", "install", "agent", "--print", "--environment-file", envFile, "--", "--token", "abc"]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain("--token would put a secret on the unit's command line");
    expect(result.stderr).toContain("LLMGW_JOIN_TOKEN");
    expect(result.stdout).toBe("");
  });

  it("refuses a user that does not exist unless asked to create it", async () => {
    const result = await runCli(["service", "install", "agent", "--user", "llmgw-no-such-user", "--environment-file", envFile, "--unit-dir", path.join(directory, "never")]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain("the user llmgw-no-such-user does not exist");
    expect(result.stderr).toContain("--create-user");
  });

  it("refuses to write to /etc/systemd/system when not root, and says how else", () => {
    // Run as nobody when the tests run as root; the command must never reach the real folder either way.
    const asRoot = process.getuid?.() === 0;
    const result = spawnSync(process.execPath, [llmgwBin, "service", "install", "agent", "--environment-file", envFile], {
      encoding: "utf8",
      cwd: "/",
      env: { PATH: process.env.PATH },
      ...(asRoot ? { uid: 65534, gid: 65534 } : {}),
    });
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain("writing to /etc/systemd/system needs root");
    expect(result.stderr).toContain("--print");
    expect(existsSync("/etc/systemd/system/llmgw-agent.service")).toBe(false);
  });
});
