import Fastify, { type FastifyInstance } from "fastify";
import type { LogSettings } from "../../log-output.js";
import { parseListen } from "../../catalog/server-config.js";
import { listenFailure } from "../../errors/listen-failure.js";
import { clientErrorAnswerer } from "../../http/error-handler.js";
import { Gateway } from "../request/gateway.js";
import { gatewayServerFactory } from "../front/gateway-server-factory.js";
import type { GatewayPolicy } from "../policy/gateway-policy.js";
import { registerGatewayRoutes } from "../front/register-gateway-routes.js";
import { requestIdFrom } from "../front/request-id-from.js";
import { reportDemandOverHttp } from "../routing/report-demand-over-http.js";
import { RoutingFollower } from "../routing/routing-follower.js";
import { reportArmsOverHttp } from "../routing/report-arms-over-http.js";
import { reportSeriesOverHttp } from "../metrics/report-series-over-http.js";
import { ClusterMetrics } from "../metrics/cluster-metrics.js";
import type { PrimaryChannel } from "../policy/ipc-shared-limits.js";
import type { TlsFiles } from "../../net/tls-files.js";
import { defaultServerLimits, type ServerLimits } from "../../catalog/server-limits.js";
import { softwareVersion } from "../../protocol/api-version.js";

export interface StandaloneGatewayOptions {
  readonly server: string;
  readonly token: string;
  readonly listen: string;
  readonly policy: GatewayPolicy;
  readonly logger?: LogSettings | false;
  /** Serve HTTPS with this certificate (--tls-cert/--tls-key), swapped for a renewed one without a restart. */
  readonly tls?: TlsFiles | undefined;
  /** The port's limits against abuse (--body-bytes, --header-timeout...); default defaultServerLimits, as a server's. */
  readonly limits?: ServerLimits;
  /** Set in a worker of `--workers N`: /metrics answers for all the workers, through the primary. */
  readonly primary?: PrimaryChannel;
}

export interface RunningGateway {
  readonly url: string;
  readonly gateway: Gateway;
  readonly app: FastifyInstance;
  /** Stops accepting, finishes what is in flight, then stops following the server. */
  close(): Promise<void>;
}

/**
 * `llmgw gateway`: the server's /v1 on another port or machine, stateless.
 * It follows the server's routing table and never reads the store; more of
 * them can stand behind a load balancer.
 */
export async function startGateway(options: StandaloneGatewayOptions): Promise<RunningGateway> {
  const listen = parseListen(options.listen, "--listen");
  const limits = options.limits ?? defaultServerLimits;
  let built: FastifyInstance | undefined;
  const log = {
    warn: (facts: Record<string, unknown>, message: string) => built?.log.warn(facts, message),
    info: (facts: Record<string, unknown>, message: string) => built?.log.info(facts, message),
  };
  const gateway = new Gateway({
    policy: options.policy,
    reportDemand: reportDemandOverHttp(options.server, options.token, log),
    environment: process.env,
    log,
    requestsPerKey: { max: limits.requestsPerKey, setting: "--requests-per-key" },
  });
  const app = Fastify({
    logger: options.logger ?? false,
    // /v1 is answered before fastify on the same server: the hot path skips its routing, hooks and replies.
    serverFactory: gatewayServerFactory(gateway, log, options.tls, limits),
    // Node's parser's refusals (a head past --header-bytes) in the API's error shape, stating the limit.
    clientErrorHandler: clientErrorAnswerer(limits.headerBytes),
    genReqId: (request) => requestIdFrom(request.headers["x-request-id"]),
    // Kept-alive idle connections are closed at shutdown; those mid-answer finish.
    forceCloseConnections: "idle",
  });
  built = app;
  const follower = new RoutingFollower({ server: options.server, token: options.token, onTable: (table) => gateway.swap(table), log });
  await follower.start();
  // The release, so an operator upgrading gateways one by one sees which ones are done.
  app.get("/healthz", async () => ({ status: "ok", version: softwareVersion, routing_revision: gateway.state.current.revision }));
  const workersMetrics = options.primary ? new ClusterMetrics(options.primary, gateway.metrics.registry) : undefined;
  registerGatewayRoutes(app, gateway, workersMetrics && (() => workersMetrics.text()));
  let url: string;
  try {
    url = await app.listen({ host: listen.host, port: listen.port });
    // fastify names the scheme from its own https option, which a server factory leaves unset.
    if (options.tls) url = url.replace(/^http:/, "https:");
  } catch (error) {
    await app.close();
    // Its long poll would keep a gateway that cannot listen running, saying nothing more.
    await follower.stop();
    throw listenFailure(`${listen.host}:${listen.port}`, "--listen", error);
  }
  // Started once listening: a gateway that cannot listen has nothing to report, and its timer would keep it running.
  const arms = reportArmsOverHttp(gateway.arms, options.server, options.token, log);
  const series = reportSeriesOverHttp(gateway.series, options.server, options.token, log);
  return {
    url,
    gateway,
    app,
    async close() {
      await app.close();
      await arms.stop();
      await series.stop();
      await follower.stop();
    },
  };
}
