// A notebook-style training loop in jshell: a Spark session with the spark-collective plugin, then several
// epochs, each one barrier stage whose tasks sum their gradients with allReduce. Run it with
//   examples/notebook/run.sh            (after: mvn -B -q -DskipTests package)
// (jshell ends a statement at the end of a complete line, so no leading-dot call chains.)
// Task code must be compiled (Spark ships closures to executors as classes), so the loop calls the
// examples' Trainer; everything else is what you would type in a notebook.
import io.sparkcollective.examples.TrainingJob;
import io.sparkcollective.examples.ml.*;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;

var conf = new SparkConf();
conf.setAppName("spark-collective notebook");
conf.setMaster(System.getProperty("master", "local-cluster[2,2,1024]"));
conf.set("spark.plugins", "io.sparkcollective.spark.CollectivePlugin");
conf.set("spark.jars", System.getProperty("examples.jar"));  // executors load the plugin from it
conf.set("spark.ui.enabled", "false");
conf.set("spark.locality.wait", "0");
var sc = new JavaSparkContext(conf);
System.out.println("executors ready: " + TrainingJob.awaitExecutors(sc, 2, 60_000));

// Synthetic data with a known answer: 16000 rows, 32 features, 4 classes, cached on the executors.
var teacher = new Teacher(32, 4, 7);
var shards = Data.synthetic(sc, teacher, 16_000, 4, 7);
var trainer = new Trainer(shards, new SoftmaxRegression(32, 4), new Optimizer(0.5, 0.8, 1e-4), 7);

// Each epoch is one barrier stage of 15 gradient steps; a new group forms for each stage.
for (int epoch = 1; epoch <= 4; epoch++) {
  long t0 = System.nanoTime();
  var steps = trainer.epoch(15);
  var last = steps.get(steps.size() - 1);
  long syncMicros = steps.stream().mapToLong(s -> s.syncNanos).sum() / 1000 / steps.size();
  System.out.printf("epoch %d  step %3d  objective %.5f  accuracy %.3f  stage %4d ms  all-reduce %5d us/step%n",
      epoch, last.index, last.objective, last.accuracy, (System.nanoTime() - t0) / 1_000_000, syncMicros);
}
System.out.println("notebook done: " + trainer.parameters().length + " parameters trained");
sc.stop();
/exit
