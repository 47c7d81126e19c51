#!/usr/bin/env bash
# The genuine servers (MySQL 9.7, PostgreSQL 18 + DocumentDB, FerretDB 2.7, DynamoDB Local 3.3.1) are
# started by packages/test-servers/servers.sh, which @worklease/test-servers owns with every other test
# server. This path stays because .ci/run, the docs and habits call it: start | stop | status | env.
exec bash "$(dirname "$0")/../packages/test-servers/servers.sh" "$@"
