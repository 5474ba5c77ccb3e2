// The plain JavaScript, as written, in a fresh directory.
import { Client } from "s3-lease"; const c = await Client.fromEnv(); const l = await c.acquire("nightly", { ttl: 30000 }); console.log(l.token); await l[Symbol.asyncDispose]();
