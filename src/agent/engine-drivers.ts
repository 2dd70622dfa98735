import type { EngineName } from "../catalog/schema.js";
import type { EngineDriver } from "../engines/driver.js";

export type DriverLookup = (engine: EngineName) => EngineDriver;

/**
 * The engine drivers (src/engines/drivers), loaded when the agent starts.
 * Loaded by a computed path so the agent builds while the drivers are being
 * written on another branch; once both are on main this becomes a static import.
 */
export async function loadEngineDrivers(): Promise<DriverLookup> {
  const modulePath = "../engines/drivers/index.js";
  const loaded = (await import(modulePath)) as { driverFor?: unknown };
  if (typeof loaded.driverFor !== "function") throw new Error(`${modulePath} exports no driverFor(engine)`);
  return loaded.driverFor as DriverLookup;
}
