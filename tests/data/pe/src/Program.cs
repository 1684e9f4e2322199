using System;
using System.Collections.Generic;
using Lib1;

namespace App;

public static class Program
{
    public static int Guarded(int x)
    {
        try
        {
            if (x > 100) throw new InvalidOperationException("big");
            return x * 2;
        }
        catch (InvalidOperationException e) when (e.Message.Length > 1)
        {
            Console.WriteLine(e.Message);
            return -1;
        }
        finally
        {
            Console.WriteLine("done");
        }
    }

    public static int Main(string[] args)
    {
        var c = new Calc();
        int n = 0;
        Console.WriteLine(Calc.Fibonacci(20));
        Console.WriteLine(c.Add(1, 2));
        Console.WriteLine(c.Join("x", args, ref n));
        var b = new Box<int>(); b.Set(5); Console.WriteLine(b.Get());
        var bs = new Box<string>(); bs.Set("s"); Console.WriteLine(bs.Get());
        var l = new List<long> { 1, 2 }; Console.WriteLine(l.Count);
        Console.WriteLine(Calc.Pick(1, 2, true));
        Console.WriteLine(new Calc.Inner().Scale(1.5, 2f));
        Console.WriteLine(Calc.Inner.Deep.First("abc"));
        Console.WriteLine(Guarded(args.Length * 200));
        return 0;
    }
}
