'use strict';
// s3-lease for Node.js: locks, leases, semaphores and leader election on
// object-store conditional writes, over the s3-lease host crate (the
// protocol lives there, in one place for every language).
const { Client } = require('./lib/client');
const { Lease } = require('./lib/lease');
const { Elector } = require('./lib/elector');
const { S3LeaseError } = require('./lib/errors');

module.exports = { Client, Lease, Elector, S3LeaseError };
