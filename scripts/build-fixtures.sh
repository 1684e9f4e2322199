#!/usr/bin/env bash
# Builds the C# test fixture app (tests/fixtures/sample) into
# build/fixtures/sample/sample.dll; run it with
#   dotnet build/fixtures/sample/sample.dll MODE [options]
# (modes: docs/fixtures.md). Safe to run again: MSBuild's incremental build
# makes a run with nothing changed take a few seconds.
# Needs only the .NET 10 SDK: the project uses framework references, no NuGet packages.
set -euo pipefail
cd "$(dirname "$0")/.."

export DOTNET_CLI_TELEMETRY_OPTOUT=1
export DOTNET_NOLOGO=1
export DOTNET_SKIP_FIRST_TIME_EXPERIENCE=1
# The CLI wants a home directory (NuGet cache, first-run sentinel).
export DOTNET_CLI_HOME="${DOTNET_CLI_HOME:-${HOME:-/tmp}}"
# Leave no MSBuild worker nodes or build server behind once the build is over:
# lingering ones can hold a caller's output pipe open.
export MSBUILDDISABLENODEREUSE=1
export DOTNET_CLI_USE_MSBUILD_SERVER=0

if ! command -v dotnet >/dev/null 2>&1; then
	echo "build-fixtures: dotnet not found; install the .NET 10 SDK" >&2
	exit 1
fi

dotnet build tests/fixtures/sample -c Release -o build/fixtures/sample --nologo -v q

if [ ! -f build/fixtures/sample/sample.dll ]; then
	echo "build-fixtures: build/fixtures/sample/sample.dll missing after the build" >&2
	exit 1
fi
