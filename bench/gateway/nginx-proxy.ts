import { mkdirSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import path from "node:path";
import { startProcess, type StartedProcess } from "./child-process.js";

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Debian's nginx as a plain reverse proxy in front of `upstreamPort`:
 * keep-alive to the upstream, no buffering (so SSE passes as it comes), no
 * access log. With one worker, one process (no master) does everything; with
 * more, a master and its workers (count their CPU together). Everything it
 * writes stays in `folder`.
 */
export async function startNginx(folder: string, upstreamPort: number, workers = 1): Promise<StartedProcess & { port: number }> {
  const port = await freePort();
  mkdirSync(folder, { recursive: true });
  const config = `
worker_processes ${workers};
daemon off;
master_process ${workers === 1 ? "off" : "on"};
pid ${folder}/nginx.pid;
error_log ${folder}/nginx-error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${folder}/client-body;
  proxy_temp_path ${folder}/proxy;
  fastcgi_temp_path ${folder}/fastcgi;
  uwsgi_temp_path ${folder}/uwsgi;
  scgi_temp_path ${folder}/scgi;
  keepalive_requests 100000;
  upstream backend {
    server 127.0.0.1:${upstreamPort};
    keepalive 128;
  }
  server {
    listen 127.0.0.1:${port}${workers > 1 ? " reuseport" : ""};
    location / {
      proxy_pass http://backend;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
    }
  }
}
`;
  const file = path.join(folder, "nginx.conf");
  writeFileSync(file, config);
  // -e: nginx otherwise opens /var/log/nginx/error.log before reading the config.
  const started = await startProcess("nginx", ["-p", folder, "-e", path.join(folder, "nginx-error.log"), "-c", file], { port }, { timeoutMs: 10_000 });
  return { ...started, port };
}
