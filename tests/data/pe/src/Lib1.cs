namespace Lib1;

public class Calc
{
    public int Bias;
    public static long Fibonacci(int n) => n < 2 ? n : Fibonacci(n - 1) + Fibonacci(n - 2);
    public int Add(int a, int b) => a + b + Bias;
    public string Join(string a, string[] parts, ref int count)
    {
        count += parts.Length;
        return a + string.Join(",", parts);
    }
    public static T Pick<T>(T a, T b, bool first) => first ? a : b;
    public class Inner
    {
        public double Scale(double x, float y) => x * y;
        public struct Deep { public static char First(string s) => s.Length > 0 ? s[0] : '\0'; }
    }
}

public class Box<T>
{
    public T Value = default!;
    public T Get() => Value;
    public void Set(T v) { Value = v; }
}
