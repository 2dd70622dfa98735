/**
 * Where a server listens and keeps its state when nothing says otherwise.
 * A module of its own, importing nothing: the CLI's option help and ctl's
 * token lookup read these on every start, and must not load the whole
 * server.yaml parser to do it.
 */
export const defaultListen = "127.0.0.1:8080";
export const defaultDataDir = "./llmgw-data";
