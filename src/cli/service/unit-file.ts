import path from "node:path";

/** The three long-running faces of llmgw, each its own systemd service. */
export const serviceFaces = ["server", "agent", "gateway"] as const;
export type ServiceFace = (typeof serviceFaces)[number];

export interface UnitSpec {
  readonly face: ServiceFace;
  readonly user: string;
  /** Absolute. */
  readonly envFile: string;
  /** Absolute. */
  readonly dataDir: string;
  /** Absolute: the node binary and bin/llmgw.js of the installed package. */
  readonly node: string;
  readonly llmgw: string;
  /** More arguments for the face (`--listen 0.0.0.0:8080`), never a secret. */
  readonly extraArguments: readonly string[];
  readonly openFiles: number;
}

/** What each face reads from its environment file; none of it belongs on a command line, where `ps` shows it to every user. */
export const environmentVariables: Readonly<Record<ServiceFace, readonly string[]>> = {
  server: ["LLMGW_SERVER_KEY (optional: the key that seals secrets at rest; otherwise a file in the data directory)", "LLMGW_DATABASE (optional: postgres://USER:PASSWORD@HOST:5432/DB)"],
  agent: ["LLMGW_SERVER=http://CONTROL:8080", "LLMGW_JOIN_TOKEN=... (from `llmgw ctl node token`; needed for the first join only)"],
  gateway: ["LLMGW_SERVER=http://CONTROL:8080", "LLMGW_TOKEN=... (an admin token: the routing table carries the replicas' keys)"],
};

export function unitName(face: ServiceFace): string {
  return `llmgw-${face}.service`;
}

/** systemd's StateDirectory= takes a path under /var/lib; anything else is made by ExecStartPre. */
export function stateDirectoryName(dataDir: string): string | undefined {
  const relative = path.posix.relative("/var/lib", dataDir);
  return relative !== "" && !relative.startsWith("..") && !path.posix.isAbsolute(relative) ? relative : undefined;
}

/**
 * Quotes one word of ExecStart= for systemd's own splitting: plain words as
 * they are, others in double quotes with backslashes, quotes, `$` and `%`
 * escaped (systemd expands `$VAR` and `%` specifiers in command lines).
 */
export function systemdWord(word: string): string {
  if (/^[A-Za-z0-9_@+=:,./-]+$/.test(word)) return word;
  return `"${word.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\$/g, "$$$$").replace(/%/g, "%%")}"`;
}

const descriptions: Readonly<Record<ServiceFace, string>> = {
  server: "llmgw server (control plane, admin API and gateway)",
  agent: "llmgw agent (runs this node's engines)",
  gateway: "llmgw gateway (OpenAI-compatible /v1, following the server's routing table)",
};

/**
 * Options that keep a service away from what it never needs, chosen so the
 * engines still run: the agent keeps /dev (GPUs: no PrivateDevices=) and its
 * own /tmp namespace-free (engines outlive an agent restart, and a private
 * /tmp would be taken away from them with the old agent), and nothing sets
 * MemoryDenyWriteExecute=, which breaks Node's and PyTorch's JIT.
 */
function hardening(face: ServiceFace): string[] {
  const common = ["NoNewPrivileges=yes", "ProtectKernelTunables=yes", "ProtectKernelModules=yes", "ProtectControlGroups=yes", "RestrictSUIDSGID=yes", "LockPersonality=yes", "RestrictRealtime=yes"];
  if (face === "agent") return [...common, "ProtectSystem=full", "ProtectHome=read-only"];
  return [...common, "ProtectSystem=strict", "ProtectHome=yes", "PrivateTmp=yes", "PrivateDevices=yes"];
}

/** The arguments the face runs with: its data there, then the operator's own. */
function faceArguments(spec: UnitSpec): string[] {
  const journal = path.posix.join(spec.dataDir, "usage-journal");
  if (spec.face === "gateway") return ["gateway", "--usage-journal", journal, ...spec.extraArguments];
  return [spec.face, "--data-dir", spec.dataDir, ...spec.extraArguments];
}

export function execStartLine(spec: UnitSpec): string {
  return [spec.node, spec.llmgw, ...faceArguments(spec)].map(systemdWord).join(" ");
}

/** The unit's text: pure, so a test can verify it with systemd-analyze and run its ExecStart. */
export function renderUnit(spec: UnitSpec): string {
  const state = stateDirectoryName(spec.dataDir);
  const dataLines = state
    ? [`StateDirectory=${state}`, "StateDirectoryMode=0700"]
    : // "+": run as root, to make the folder the service user owns before the service starts as that user.
      [`ExecStartPre=+/usr/bin/install -d -m 0700 -o ${spec.user} -g ${spec.user} ${systemdWord(spec.dataDir)}`, `ReadWritePaths=${systemdWord(spec.dataDir)}`];
  const lines = [
    "# Written by `llmgw service install`; run it again to rewrite this file.",
    "[Unit]",
    `Description=${descriptions[spec.face]}`,
    "After=network-online.target",
    "Wants=network-online.target",
    "",
    "[Service]",
    "Type=simple",
    `User=${spec.user}`,
    `Group=${spec.user}`,
    // Secrets (join token, admin token, database URL) come from here, never from the command line.
    `EnvironmentFile=${systemdWord(spec.envFile)}`,
    `Environment=HOME=${systemdWord(spec.dataDir)}`,
    ...dataLines,
    `ExecStart=${execStartLine(spec)}`,
    "Restart=always",
    "RestartSec=2",
    `LimitNOFILE=${spec.openFiles}`,
    ...(spec.face === "agent"
      ? [
          "# Stop only the agent: its engines keep serving, and the next agent adopts them.",
          "KillMode=process",
          // The agent's own stop is quick; an engine is never waited on here.
          "TimeoutStopSec=30",
        ]
      : ["TimeoutStopSec=90"]),
    "StandardOutput=journal",
    "StandardError=journal",
    `SyslogIdentifier=llmgw-${spec.face}`,
    ...hardening(spec.face),
    "",
    "[Install]",
    "WantedBy=multi-user.target",
    "",
  ];
  return lines.join("\n");
}
