"""QNN / RPQNN vs MLPClassifier fit time: optdigits 64-30-10, adam, 20 epochs, batch 200."""
import sys, time, warnings
import numpy as np
from sklearn.neural_network import MLPClassifier
from sklearn.preprocessing import StandardScaler
from skquad import QNNClassifier, RPQNNClassifier
from skquad.datasets import load_uci

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 7
dtype = sys.argv[2] if len(sys.argv) > 2 else "float64"
X, y = load_uci("optdigits", return_X_y=True, as_frame=True)
X = StandardScaler().fit_transform(np.asarray(X, dtype=np.float64)).astype(dtype)
y = np.asarray(y).astype(str)
common = dict(hidden_layer_sizes=(30,), max_iter=20, batch_size=200, learning_rate_init=1e-3, tol=0.0,
              n_iter_no_change=10**6, random_state=0)
makers = {"MLP": lambda: MLPClassifier(**common), "QNN": lambda: QNNClassifier(**common, device="cpu"),
          "RPQNN": lambda: RPQNNClassifier(**common, device="cpu")}
times = {k: [] for k in makers}
for r in range(rounds):
    for name, make in makers.items():
        clf = make()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = time.perf_counter(); clf.fit(X, y); times[name].append(time.perf_counter() - t)
base = np.array(times["MLP"])
print(f"{dtype} X{X.shape} rounds={rounds}")
for name, v in times.items():
    v = np.array(v)
    print(f"{name:6s} median {np.median(v):.3f}s  ratio(median of rounds) {np.median(v/base):.2f}  all {np.round(v/base,2).tolist()}")
