#!/usr/bin/env bash
# Builds the C# test fixture app (tests/fixtures/sample), the real-app fixture
# (tests/fixtures/realapp -> build/fixtures/realapp/realapp.dll), the
# TraceEvent checker (tests/fixtures/techeck) and the ClrMD dump reader
# (tests/tools/clrmd-ref -> build/tests/tools/clrmd-ref/clrmd-ref.dll) into
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

# The native fixture library (tests/fixtures/native/natsym.c, the
# "native-hot" mode, t-natsym.sh): built with a GNU build-id, its debug file
# kept apart (build/fixtures/native/debug/), the library itself stripped, so
# that only a symbol source names its hot functions.
NAT=build/fixtures/native
mkdir -p "$NAT/debug"
${CC:-cc} -O2 -g -fPIC -shared -fvisibility=hidden -Wl,--build-id=sha1 \
	-o "$NAT/libclrtapnat.so.full" tests/fixtures/native/natsym.c
objcopy --only-keep-debug "$NAT/libclrtapnat.so.full" "$NAT/debug/libclrtapnat.so.debug"
objcopy --strip-all "$NAT/libclrtapnat.so.full" "$NAT/libclrtapnat.so"
rm -f "$NAT/libclrtapnat.so.full"

dotnet build tests/fixtures/sample -c Release -o build/fixtures/sample --nologo -v q

# libnatfix.so, the native half of the native-leak and native-pairs modes
# (P/Invoke "natfix"): frame pointers kept, no sibling calls, so a sampled
# malloc's stack reads the library's function, then its managed caller.
NATFIX_CFLAGS="-std=c11 -O2 -fPIC -shared -fno-omit-frame-pointer -fno-optimize-sibling-calls"
# shellcheck disable=SC2086
gcc $NATFIX_CFLAGS -o build/fixtures/sample/libnatfix.so tests/fixtures/natfix/natfix.c

# The TraceEvent cross-check (t-trace-report.sh) needs a NuGet package; the
# test says it skipped the check when this project could not be built.
dotnet build tests/fixtures/techeck -c Release -o build/fixtures/techeck --nologo -v q ||
	echo "build-fixtures: tests/fixtures/techeck not built (needs Microsoft.Diagnostics.Tracing.TraceEvent from NuGet); t-trace-report.sh skips its TraceEvent cross-check" >&2

# The ClrMD reference for post-mortem analysis (tests/tools/clrmd-ref, issue
# 32) needs Microsoft.Diagnostics.Runtime from NuGet; the tests that compare
# against it say they skipped the comparison when it could not be built.
dotnet build tests/tools/clrmd-ref -c Release -o build/tests/tools/clrmd-ref --nologo -v q ||
	echo "build-fixtures: build/tests/tools/clrmd-ref not built (needs Microsoft.Diagnostics.Runtime 4.2.750101 from NuGet); the dump-analysis tests skip their ClrMD cross-check" >&2

# The real-app fixture (tests/fixtures/realapp: ASP.NET Core + EF Core over
# SQLite + Identity) needs NuGet packages (Microsoft.EntityFrameworkCore.Sqlite,
# Microsoft.AspNetCore.Identity.EntityFrameworkCore and what they bring); its
# tests say they skipped when it could not be built. MSBuild's incremental
# build makes a second run with nothing changed take a few seconds.
dotnet build tests/fixtures/realapp -c Release -o build/fixtures/realapp --nologo -v q ||
	echo "build-fixtures: build/fixtures/realapp not built (needs Microsoft.EntityFrameworkCore.Sqlite and Microsoft.AspNetCore.Identity.EntityFrameworkCore 10.0.15 from NuGet); t-realapp.sh skips" >&2

# The source-line fixture (t-lines-live.sh), three ways: Debug with its PDB
# beside it, Release with the PDB embedded, Release published ReadyToRun
# (crossgen2 from NuGet: without it that variant is skipped, and said).
dotnet build tests/fixtures/lines -c Debug -o build/fixtures/lines/debug --nologo -v q
dotnet build tests/fixtures/lines -c Release -p:DebugType=embedded \
	-o build/fixtures/lines/release-embedded --nologo -v q
dotnet publish tests/fixtures/lines -c Release -r linux-x64 --self-contained false \
	-p:PublishReadyToRun=true -o build/fixtures/lines/r2r --nologo -v q ||
	{
		echo "build-fixtures: build/fixtures/lines/r2r not built (needs crossgen2 from NuGet); t-lines-live.sh skips its ReadyToRun variant" >&2
		rm -rf build/fixtures/lines/r2r
	}

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
if [ -d build/fixtures/sample-musl ] && command -v musl-gcc >/dev/null 2>&1; then
	# shellcheck disable=SC2086
	musl-gcc $NATFIX_CFLAGS -o build/fixtures/sample-musl/libnatfix.so tests/fixtures/natfix/natfix.c
fi

if [ ! -f build/fixtures/sample/sample.dll ]; then
	echo "build-fixtures: build/fixtures/sample/sample.dll missing after the build" >&2
	exit 1
fi

# ---- runtime matrix (tests/integration/t-runtimes.sh) ----
# tests/fixtures/matrix published self-contained for each runtime the matrix
# covers, from NuGet's runtime packs: build/fixtures/matrix/<rt>/matrix.
#   net8, net9, net10   dotnet publish of net8.0/net9.0/net10.0 for linux-x64
#                       (the SDK picks each runtime pack's version)
#   net11               the net10 publish with the runtime files of
#                       Microsoft.NETCore.App.Runtime.linux-x64 11.0.0
#                       (native/* and lib/net11.0/*.dll; the .NET 10 SDK
#                       cannot target net11.0)
#   musl-net10          dotnet publish of net10.0 for linux-musl-x64 (10.0.12)
#   musl-net11          musl-net10 with the linux-musl-x64 11.0.0 pack's files
#   musl-net8           the net8 publish with the linux-musl-x64 8.0.34 pack's
#                       files and musl-net10's launcher (NuGet serves no musl
#                       apphost pack for 8.0: the launcher only starts the
#                       app's own hostfxr, of any version)
# Each one is built from its own copy of the sources (own obj/). A stamp (the
# sources and this block hashed) makes a run with nothing changed a no-op
# (first build: about a minute, mostly NuGet downloads).
# A runtime whose packs could not be had is left out with a note; the test
# says which it skipped.
MX=build/fixtures/matrix
NET11=11.0.0
MUSL8=8.0.34
mx_stamp=$(cat tests/fixtures/matrix/Matrix.csproj tests/fixtures/matrix/Program.cs \
	<(sed -n '/^# ---- runtime matrix/,$p' "$0") | sha256sum | cut -c1-32)
if [ "$(cat "$MX/stamp" 2>/dev/null)" != "$mx_stamp" ]; then
	rm -rf "$MX" && mkdir -p "$MX"
	# mx_publish RT TFM [msbuild args...]: one self-contained publish into $MX/RT.
	mx_publish() {
		local rt=$1 tfm=$2 rid=linux-x64
		shift 2
		case $rt in musl-*) rid=linux-musl-x64 ;; esac
		mkdir -p "$MX/src-$rt" &&
			cp tests/fixtures/matrix/Program.cs "$MX/src-$rt/" &&
			sed "s|<TargetFramework>net10.0</TargetFramework>|<TargetFramework>$tfm</TargetFramework>|" \
				tests/fixtures/matrix/Matrix.csproj >"$MX/src-$rt/Matrix.csproj" &&
			dotnet publish "$MX/src-$rt/Matrix.csproj" -c Release -r "$rid" --self-contained \
				"$@" -o "$MX/$rt" --nologo -v q >"$MX/$rt.log" 2>&1 ||
			{
				echo "build-fixtures: $MX/$rt not built (needs the $tfm runtime pack from NuGet); t-runtimes.sh skips it:" >&2
				tail -5 "$MX/$rt.log" >&2
				rm -rf "${MX:?}/$rt"
			}
	}
	# the runtime packs of .NET 11 and musl 8.0, downloaded by a project that only restores
	mkdir -p "$MX/pack11"
	cat >"$MX/pack11/pack11.csproj" <<PROJ
<Project Sdk="Microsoft.NET.Sdk">
  <PropertyGroup><TargetFramework>net10.0</TargetFramework></PropertyGroup>
  <ItemGroup>
    <PackageDownload Include="Microsoft.NETCore.App.Runtime.linux-x64" Version="[$NET11]" />
    <PackageDownload Include="Microsoft.NETCore.App.Runtime.linux-musl-x64" Version="[$MUSL8];[$NET11]" />
  </ItemGroup>
</Project>
PROJ
	# Restores mostly wait on the network: the four publishes and the download run at once.
	mx_publish net8 net8.0 &
	mx_publish net9 net9.0 &
	mx_publish net10 net10.0 &
	mx_publish musl-net10 net10.0 -p:RuntimeFrameworkVersion=10.0.12 &
	dotnet restore "$MX/pack11/pack11.csproj" --nologo -v q >"$MX/pack11.log" 2>&1 &
	wait
	pkgs=$(dotnet nuget locals global-packages --list 2>/dev/null | sed -n 's/^global-packages: //p')
	# mx_swap RT FROM RID VERSION TFM: RT is FROM with that runtime pack's files.
	mx_swap() {
		local pack="${pkgs%/}/microsoft.netcore.app.runtime.$3/$4/runtimes/$3"
		if [ -d "$MX/$2" ] && [ -f "$pack/native/libcoreclr.so" ]; then
			# hard links to FROM's files; each file replaced is unlinked first
			cp -al "$MX/$2" "$MX/$1" && rm -f "$MX/$1"/*.so &&
				cp --remove-destination "$pack"/native/* "$pack"/lib/"$5"/*.dll "$MX/$1/"
		else
			echo "build-fixtures: $MX/$1 not built (needs $MX/$2 and Microsoft.NETCore.App.Runtime.$3 $4 from NuGet); t-runtimes.sh skips it" >&2
		fi
	}
	mx_swap net11 net10 linux-x64 "$NET11" net11.0
	mx_swap musl-net11 musl-net10 linux-musl-x64 "$NET11" net11.0
	mx_swap musl-net8 net8 linux-musl-x64 "$MUSL8" net8.0
	if [ -x "$MX/musl-net8/matrix" ] && [ -x "$MX/musl-net10/matrix" ]; then
		cp --remove-destination "$MX/musl-net10/matrix" "$MX/musl-net8/matrix"
	fi
	rm -rf "$MX"/src-* "$MX/pack11"
	# stamped only when whole: a runtime left out is tried again next time
	mx_all=1
	for rt in net8 net9 net10 net11 musl-net8 musl-net10 musl-net11; do
		[ -x "$MX/$rt/matrix" ] || mx_all=0
	done
	if [ $mx_all = 1 ]; then
		rm -f "$MX"/*.log
		echo "$mx_stamp" >"$MX/stamp"
	fi
fi
