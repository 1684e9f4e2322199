// clrmd-ref DUMP [--dac PATH]: what ClrMD reads from a core dump, as one
// JSON document on stdout (the reference for clrtap's dump analysis tests):
//
// {"runtime":"10.0.12","dac":"/path/libmscordaccore.so",
//  "threads":[{"os_tid":N,"managed_tid":N,"alive":true,
//              "frames":["Ns.Type::Method", ...leaf first],
//              "exception":{"type":"..","message":"..","inner":{...}|null}|null}],
//  "heap":[{"type":"Ns.Type","count":N,"bytes":N}, ...]}
//
// threads: every thread ClrMD lists (the runtime's thread store, dead ones
// too: alive false, os_tid 0). frames: only frames of kind ManagedMethod,
// named ClrMethod.Type.Name + "::" + ClrMethod.Name. heap: every object of
// the GC heap grouped by ClrType.Name ("Free" included), sorted by bytes
// descending, then by name. The DAC is the libmscordaccore.so beside the
// dump's libcoreclr.so path on this machine unless --dac names one; none is
// ever downloaded. runtime: the version ClrMD reads, or when it reads none
// (Linux dumps, ClrMD 4.2) the name of the runtime's directory. Exit 1 with one line on stderr when the dump cannot be
// read, 2 on a usage error.

using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Text.Json;
using Microsoft.Diagnostics.Runtime;

namespace Clrtap.ClrmdRef;

public static class Program
{
    public static int Main(string[] args)
    {
        string? dump = null, dac = null;
        for (int i = 0; i < args.Length; i++)
        {
            if (args[i] == "--dac" && i + 1 < args.Length)
            {
                dac = args[++i];
            }
            else if (dump is null && !args[i].StartsWith("-", StringComparison.Ordinal))
            {
                dump = args[i];
            }
            else
            {
                Console.Error.WriteLine("usage: clrmd-ref DUMP [--dac PATH]");
                return 2;
            }
        }

        if (dump is null)
        {
            Console.Error.WriteLine("usage: clrmd-ref DUMP [--dac PATH]");
            return 2;
        }

        try
        {
            Run(dump, dac);
            return 0;
        }
        catch (Exception e)
        {
            Console.Error.WriteLine($"clrmd-ref: {dump}: {e.GetType().Name}: {e.Message}");
            return 1;
        }
    }

    private static void Run(string dump, string? dac)
    {
        using DataTarget dt = DataTarget.LoadDump(dump);
        if (dt.ClrVersions.Length == 0)
        {
            throw new InvalidDataException("no .NET runtime in the dump");
        }

        ClrInfo clr = dt.ClrVersions[0];
        dac ??= Path.Combine(Path.GetDirectoryName(clr.ModuleInfo.FileName) ?? ".", "libmscordaccore.so");
        if (!File.Exists(dac))
        {
            throw new FileNotFoundException($"no DAC at {dac} (give one with --dac)");
        }

        // ClrMD 4.2 reads no version from a Linux dump's libcoreclr.so (it says
        // 0.0 and refuses every DAC as mismatched): the version then comes from
        // the runtime's directory name (.../Microsoft.NETCore.App/10.0.12/), and
        // the DAC beside that very path is taken without ClrMD's version check.
        string version = $"{clr.Version.Major}.{clr.Version.Minor}.{clr.Version.Build}";
        bool unversioned = clr.Version.Major == 0;
        if (unversioned)
        {
            version = Path.GetFileName(Path.GetDirectoryName(clr.ModuleInfo.FileName) ?? "") is { Length: > 0 } d &&
                char.IsDigit(d[0]) ? d : "unknown";
        }

        using ClrRuntime runtime = clr.CreateRuntime(dac, ignoreMismatch: unversioned);
        using var stdout = Console.OpenStandardOutput();
        using var w = new Utf8JsonWriter(stdout, new JsonWriterOptions { Indented = false });
        w.WriteStartObject();
        w.WriteString("runtime", version);
        w.WriteString("dac", dac);

        w.WriteStartArray("threads");
        foreach (ClrThread t in runtime.Threads)
        {
            w.WriteStartObject();
            w.WriteNumber("os_tid", t.OSThreadId);
            w.WriteNumber("managed_tid", t.ManagedThreadId);
            w.WriteBoolean("alive", t.IsAlive);
            w.WriteStartArray("frames");
            foreach (ClrStackFrame f in t.EnumerateStackTrace())
            {
                if (f.Kind == ClrStackFrameKind.ManagedMethod && f.Method is { } m)
                {
                    w.WriteStringValue((m.Type?.Name ?? "?") + "::" + m.Name);
                }
            }

            w.WriteEndArray();
            w.WritePropertyName("exception");
            WriteException(w, t.CurrentException, 0);
            w.WriteEndObject();
        }

        w.WriteEndArray();

        var stats = new Dictionary<string, (long Count, ulong Bytes)>(StringComparer.Ordinal);
        foreach (ClrObject o in runtime.Heap.EnumerateObjects())
        {
            string name = o.Type?.Name ?? "<unknown>";
            stats.TryGetValue(name, out var s);
            stats[name] = (s.Count + 1, s.Bytes + o.Size);
        }

        w.WriteStartArray("heap");
        foreach (var kv in stats.OrderByDescending(kv => kv.Value.Bytes).ThenBy(kv => kv.Key, StringComparer.Ordinal))
        {
            w.WriteStartObject();
            w.WriteString("type", kv.Key);
            w.WriteNumber("count", kv.Value.Count);
            w.WriteNumber("bytes", kv.Value.Bytes);
            w.WriteEndObject();
        }

        w.WriteEndArray();
        w.WriteEndObject();
        w.Flush();
        stdout.WriteByte((byte)'\n');
    }

    private static void WriteException(Utf8JsonWriter w, ClrException? e, int depth)
    {
        if (e is null || depth > 16)
        {
            w.WriteNullValue();
            return;
        }

        w.WriteStartObject();
        w.WriteString("type", e.Type?.Name ?? "<unknown>");
        w.WriteString("message", e.Message);
        w.WritePropertyName("inner");
        WriteException(w, e.Inner, depth + 1);
        w.WriteEndObject();
    }
}
