import type { Socket } from "node:net";
import type { V1Response } from "./v1-response.js";

/**
 * Ends the connection once this answer has left: a kept-alive connection of a
 * closing gateway would otherwise hold the server's close open until its idle
 * timeout.
 */
export function endConnectionAfter(response: V1Response, socket: Socket | null): void {
  const end = () => socket?.end();
  if (response.writableFinished) end();
  else response.once("finish", end);
}
