import type { EngineName } from "../catalog/index.js";
import { type EngineDriver, driverFor } from "../engines/index.js";

export type DriverLookup = (engine: EngineName) => EngineDriver;

/** The engine drivers of src/engines/drivers; a seam so tests can run a stand-in engine. */
export async function loadEngineDrivers(): Promise<DriverLookup> {
  return driverFor;
}
