import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.*;
import org.apache.lucene.analysis.*;
import org.apache.lucene.analysis.en.EnglishAnalyzer;
import org.apache.lucene.analysis.tokenattributes.CharTermAttribute;
import io.anserini.analysis.DefaultEnglishAnalyzer;

/** Each input line -> its tokens (space-joined) under Lucene's EnglishAnalyzer (= ES `english`);
 *  checks Anserini's DefaultEnglishAnalyzer gives the same tokens. args: in out [stopwords-out] */
public class Analyze {
  static List<String> toks(Analyzer a, String s) throws IOException {
    List<String> out = new ArrayList<>();
    try (TokenStream ts = a.tokenStream("contents", s)) {
      CharTermAttribute t = ts.addAttribute(CharTermAttribute.class);
      ts.reset(); while (ts.incrementToken()) out.add(t.toString()); ts.end();
    }
    return out;
  }
  public static void main(String[] args) throws Exception {
    Analyzer lucene = new EnglishAnalyzer();
    Analyzer anserini = DefaultEnglishAnalyzer.newDefaultInstance();
    long lines = 0, differ = 0;
    try (BufferedReader r = new BufferedReader(new InputStreamReader(new FileInputStream(args[0]), StandardCharsets.UTF_8));
         PrintWriter w = new PrintWriter(new OutputStreamWriter(new FileOutputStream(args[1]), StandardCharsets.UTF_8))) {
      String line;
      while ((line = r.readLine()) != null) {
        List<String> a = toks(lucene, line), b = toks(anserini, line);
        if (!a.equals(b)) differ++;
        lines++;
        w.println(String.join(" ", a));
      }
    }
    System.err.println("lines " + lines + ", Lucene EnglishAnalyzer vs Anserini DefaultEnglishAnalyzer differ on " + differ);
    if (args.length > 2) try (PrintWriter w = new PrintWriter(args[2], "UTF-8")) {
      List<String> stop = new ArrayList<>();
      for (Object o : EnglishAnalyzer.ENGLISH_STOP_WORDS_SET) stop.add(new String((char[]) o));
      Collections.sort(stop); for (String s : stop) w.println(s);
    }
  }
}
