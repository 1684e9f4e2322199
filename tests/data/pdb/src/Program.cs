using System;
using System.Diagnostics;
using System.Reflection;

// Sample for lib/pe/pe_pdb.c: prints what the runtime says about its own
// frames: "token iloffset file line" per frame, for a loop and a throw site.
static class Program
{
    static int Work(int n)
    {
        int acc = 0;
        for (int i = 0; i < n; i++)
        {
            acc += i * 3;
            if (i == n - 1)
                Print(new StackTrace(true));
        }
        return acc;
    }

    static void Thrower(int x)
    {
        if (x > 0)
            throw new InvalidOperationException("boom " + x);
    }

    static void Print(StackTrace st)
    {
        foreach (var f in st.GetFrames())
        {
            var m = f.GetMethod();
            if (m == null || m.DeclaringType != typeof(Program))
                continue;
            Console.WriteLine("0x{0:x8} {1} {2} {3} {4}", m.MetadataToken, f.GetILOffset(),
                              System.IO.Path.GetFileName(f.GetFileName() ?? "-"),
                              f.GetFileLineNumber(), f.GetFileColumnNumber());
        }
    }

    static int Main()
    {
        Work(10);
        try
        {
            Thrower(5);
        }
        catch (Exception e)
        {
            Print(new StackTrace(e, true));
        }
        return 0;
    }
}
