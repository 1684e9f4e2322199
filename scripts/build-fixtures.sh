#!/usr/bin/env bash
# Builds the C# test fixture app (tests/fixtures/sample), the real-app fixture
# (tests/fixtures/realapp -> build/fixtures/realapp/realapp.dll) and the
# TraceEvent checker (tests/fixtures/techeck) into
# build/fixtures/sample/sample.dll; run it with
#   dotnet build/fixtures/sample/sample.dll MODE [options]
# (modes: docs/fixtures.md). Safe to run again: MSBuild's incremental build
# makes a run with nothing changed take a few seconds.
# The sample app needs only the .NET 10 SDK (framework references, no NuGet
# packages); tests/fixtures/techeck needs Microsoft.Diagnostics.Tracing.TraceEvent.
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

# The TraceEvent cross-check (t-trace-report.sh) needs a NuGet package; the
# test says it skipped the check when this project could not be built.
dotnet build tests/fixtures/techeck -c Release -o build/fixtures/techeck --nologo -v q ||
	echo "build-fixtures: tests/fixtures/techeck not built (needs Microsoft.Diagnostics.Tracing.TraceEvent from NuGet); t-trace-report.sh skips its TraceEvent cross-check" >&2

# The real-app fixture (tests/fixtures/realapp: ASP.NET Core + EF Core over
# SQLite + Identity) needs NuGet packages (Microsoft.EntityFrameworkCore.Sqlite,
# Microsoft.AspNetCore.Identity.EntityFrameworkCore and what they bring); its
# tests say they skipped when it could not be built. MSBuild's incremental
# build makes a second run with nothing changed take a few seconds.
dotnet build tests/fixtures/realapp -c Release -o build/fixtures/realapp --nologo -v q ||
	echo "build-fixtures: build/fixtures/realapp not built (needs Microsoft.EntityFrameworkCore.Sqlite and Microsoft.AspNetCore.Identity.EntityFrameworkCore 10.0.15 from NuGet); t-realapp.sh skips" >&2

# The same app published self-contained for linux-musl-x64 (Alpine's
# runtime) for t-agent-musl.sh; needs the musl runtime packs from NuGet, and
# builds from a copy of the sources (its own obj/). The test says it skipped
# when this could not be built.
rm -rf build/fixtures/musl-src && mkdir -p build/fixtures/musl-src &&
	cp tests/fixtures/sample/*.cs tests/fixtures/sample/Sample.csproj build/fixtures/musl-src/ &&
	dotnet publish build/fixtures/musl-src/Sample.csproj -c Release -r linux-musl-x64 --self-contained \
		-p:UseAppHost=true -p:RuntimeFrameworkVersion=10.0.12 -p:InvariantGlobalization=true \
		-o build/fixtures/sample-musl --nologo -v q ||
	echo "build-fixtures: build/fixtures/sample-musl not built (needs Microsoft.NETCore.App.Runtime.linux-musl-x64 10.0.12 from NuGet); t-agent-musl.sh skips" >&2

if [ ! -f build/fixtures/sample/sample.dll ]; then
	echo "build-fixtures: build/fixtures/sample/sample.dll missing after the build" >&2
	exit 1
fi
