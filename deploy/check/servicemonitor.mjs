// ServiceMonitors (a JSON array on stdin) against the Prometheus operator's
// CRD schema, as @kubernetes-models/prometheus-operator compiles it.
//   node servicemonitor.mjs NODE_MODULES < objects.json
// Prints one line per problem and exits 1 when there is any.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const modules = process.argv[2];
const file = join(modules, "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor.mjs");
const { ServiceMonitor } = await import(pathToFileURL(file).href);

let failed = false;
for (const obj of JSON.parse(readFileSync(0, "utf8"))) {
  const name = `${obj.kind}/${obj.metadata?.name}`;
  if (obj.kind !== "ServiceMonitor" || obj.apiVersion !== "monitoring.coreos.com/v1") {
    console.log(`${name}: no schema for ${obj.apiVersion} ${obj.kind}`);
    failed = true;
    continue;
  }
  try {
    new ServiceMonitor(obj).validate();
  } catch (e) {
    console.log(`${name} is not a valid ServiceMonitor: ${e.message}`);
    failed = true;
  }
}
process.exit(failed ? 1 : 0);
