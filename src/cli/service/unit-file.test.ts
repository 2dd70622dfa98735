import { describe, expect, it } from "vitest";
import { execStartLine, renderUnit, stateDirectoryName, systemdWord, type UnitSpec } from "./unit-file.js";

const spec = (overrides: Partial<UnitSpec> = {}): UnitSpec => ({
  face: "agent",
  user: "llmgw",
  envFile: "/etc/llmgw/agent.env",
  dataDir: "/var/lib/llmgw-agent",
  node: "/usr/bin/node",
  llmgw: "/usr/lib/node_modules/llmgw/bin/llmgw.js",
  extraArguments: ["--listen", "0.0.0.0:9000"],
  openFiles: 65536,
  ...overrides,
});

const lines = (text: string) => text.split("\n");

describe("the systemd unit of a face", () => {
  it("stops only the agent's own process, so its engines keep serving through a restart", () => {
    expect(lines(renderUnit(spec()))).toContain("KillMode=process");
    expect(renderUnit(spec({ face: "server" }))).not.toContain("KillMode=");
  });

  it("runs as its own user, restarts always, reads secrets from the environment file and raises the open-file limit", () => {
    const unit = lines(renderUnit(spec({ openFiles: 100000 })));
    expect(unit).toEqual(expect.arrayContaining(["User=llmgw", "Group=llmgw", "Restart=always", "EnvironmentFile=/etc/llmgw/agent.env", "LimitNOFILE=100000"]));
  });

  it("starts the installed llmgw with absolute paths and the face's data directory", () => {
    expect(execStartLine(spec())).toBe("/usr/bin/node /usr/lib/node_modules/llmgw/bin/llmgw.js agent --data-dir /var/lib/llmgw-agent --listen 0.0.0.0:9000");
    expect(execStartLine(spec({ face: "gateway", dataDir: "/var/lib/llmgw-gateway", extraArguments: [] }))).toBe(
      "/usr/bin/node /usr/lib/node_modules/llmgw/bin/llmgw.js gateway --usage-journal /var/lib/llmgw-gateway/usage-journal",
    );
  });

  it("lets systemd make a data directory under /var/lib with mode 0700, and makes any other before each start", () => {
    expect(lines(renderUnit(spec()))).toEqual(expect.arrayContaining(["StateDirectory=llmgw-agent", "StateDirectoryMode=0700"]));
    const elsewhere = lines(renderUnit(spec({ dataDir: "/data/llmgw" })));
    expect(elsewhere).toContain("ExecStartPre=+/usr/bin/install -d -m 0700 -o llmgw -g llmgw /data/llmgw");
    expect(elsewhere).toContain("ReadWritePaths=/data/llmgw");
    expect(elsewhere.some((line) => line.startsWith("StateDirectory="))).toBe(false);
    expect([stateDirectoryName("/var/lib"), stateDirectoryName("/var/lib/../etc"), stateDirectoryName("/var/lib/a/b")]).toEqual([undefined, undefined, "a/b"]);
  });

  it("keeps the agent's devices and /tmp, which engines need, and hides them from the server", () => {
    const agent = renderUnit(spec());
    expect(agent).not.toMatch(/PrivateDevices|PrivateTmp|MemoryDenyWriteExecute/);
    expect(lines(renderUnit(spec({ face: "server" })))).toEqual(expect.arrayContaining(["PrivateDevices=yes", "PrivateTmp=yes", "ProtectSystem=strict"]));
  });

  it("quotes words systemd would split or expand", () => {
    expect(systemdWord("/opt/my models")).toBe('"/opt/my models"');
    expect(systemdWord("cost$5%")).toBe('"cost$$5%%"');
    expect(systemdWord('say "hi"')).toBe('"say \\"hi\\""');
    expect(systemdWord("labels=zone=a,rack=b")).toBe("labels=zone=a,rack=b");
  });
});
