import java.io.*;
import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.util.*;
import org.apache.lucene.analysis.*;
import org.apache.lucene.analysis.en.EnglishAnalyzer;
import org.apache.lucene.analysis.tokenattributes.CharTermAttribute;
import org.apache.lucene.index.*;
import org.apache.lucene.search.*;
import org.apache.lucene.search.similarities.BM25Similarity;
import org.apache.lucene.store.FSDirectory;

/** BM25 search of an Anserini index with plain Lucene, writing unrounded float scores
 *  (Anserini's SearchCollection rounds scores to 4 decimals and breaks the ties by docid).
 *  Query = bag of words as Anserini's BagOfWordsQueryGenerator: one SHOULD TermQuery per distinct
 *  analyzed term, boosted by its count. args: index topics.tsv out.run k1 b hits */
public class Search {
  public static void main(String[] args) throws Exception {
    float k1 = Float.parseFloat(args[3]), b = Float.parseFloat(args[4]);
    int hits = Integer.parseInt(args[5]);
    Analyzer analyzer = new EnglishAnalyzer();
    IndexReader reader = DirectoryReader.open(FSDirectory.open(Paths.get(args[0])));
    IndexSearcher searcher = new IndexSearcher(reader);
    searcher.setSimilarity(new BM25Similarity(k1, b));
    StoredFields stored = reader.storedFields();
    String[] ids = new String[reader.maxDoc()];  // docid -> id, read once
    for (int d = 0; d < ids.length; d++) ids[d] = stored.document(d, Collections.singleton("id")).get("id");
    try (BufferedReader r = new BufferedReader(new InputStreamReader(new FileInputStream(args[1]), StandardCharsets.UTF_8));
         PrintWriter w = new PrintWriter(new OutputStreamWriter(new FileOutputStream(args[2]), StandardCharsets.UTF_8))) {
      String line;
      while ((line = r.readLine()) != null) {
        String[] parts = line.split("\t", 2);
        Map<String, Integer> counts = new LinkedHashMap<>();
        try (TokenStream ts = analyzer.tokenStream("contents", parts.length > 1 ? parts[1] : "")) {
          CharTermAttribute t = ts.addAttribute(CharTermAttribute.class);
          ts.reset(); while (ts.incrementToken()) counts.merge(t.toString(), 1, Integer::sum); ts.end();
        }
        if (counts.isEmpty()) continue;
        BooleanQuery.Builder q = new BooleanQuery.Builder();
        for (Map.Entry<String, Integer> e : counts.entrySet()) {
          Query tq = new TermQuery(new Term("contents", e.getKey()));
          q.add(e.getValue() == 1 ? tq : new BoostQuery(tq, e.getValue()), BooleanClause.Occur.SHOULD);
        }
        TopDocs top = searcher.search(q.build(), hits);
        int rank = 1;
        for (ScoreDoc sd : top.scoreDocs) {
          String id = ids[sd.doc];
          w.println(parts[0] + " Q0 " + id + " " + (rank++) + " " + sd.score + " lucene");
        }
      }
    }
  }
}
