// The ES module entry: the same classes as the CommonJS one (one copy of
// the package's state, whichever way it is loaded).
import cjs from './index.js';

export const { Client, Lease, Elector, S3LeaseError } = cjs;
export default cjs;
