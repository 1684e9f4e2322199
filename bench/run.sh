#!/usr/bin/env bash
# Runs every benchmark in bench/ (bench/*.sh except this file).
set -u
cd "$(dirname "$0")"
for b in bench-*.sh; do
	echo "== $b"
	bash "$b" || echo "$b failed"
done
