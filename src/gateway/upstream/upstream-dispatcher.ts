import type { IncomingHttpHeaders } from "node:http";

/** What a handler may do to the request it is reading: the same three calls undici's dispatch controller takes. */
export interface UpstreamController {
  /** Stops reading the answer until resume(): a slow client holds the upstream back instead of filling memory. */
  pause(): void;
  resume(): void;
  /** Gives the request up; the handler's onResponseError follows with this reason. */
  abort(reason: Error): void;
}

/**
 * Receives one upstream answer as it arrives. The calls come in order:
 * onRequestStart, then onResponseStart once, onResponseData any number of
 * times and onResponseEnd; or onResponseError at any point, after which
 * nothing more comes. The shape is undici's DispatchHandler, so one handler
 * serves either client.
 */
export interface UpstreamHandler {
  onRequestStart(controller: UpstreamController): void;
  onResponseStart(controller: UpstreamController, statusCode: number, headers: IncomingHttpHeaders): void;
  onResponseData(controller: UpstreamController, chunk: Buffer): void;
  onResponseEnd(controller: UpstreamController): void;
  onResponseError(controller: UpstreamController, error: Error): void;
}

export interface UpstreamRequest {
  readonly method: "POST";
  readonly path: string;
  /** Lower-case names; host and content-length are the client's to add. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
}

/** The connections to one upstream origin. */
export interface UpstreamDispatcher {
  dispatch(request: UpstreamRequest, handler: UpstreamHandler): void;
  /** Lets requests under way finish, then closes every connection. */
  close(): Promise<void>;
}
