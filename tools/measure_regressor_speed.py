"""QNNRegressor / RPQNNRegressor vs MLPRegressor epoch time at the same shape, dtype and batch.

Usage: python tools/measure_regressor_speed.py ROUNDS DTYPE [N D HIDDEN]
(default 7 rounds, float64, n=4000, d=20, hidden=(100,)): adam, batch 200,
20 epochs, rounds interleaved; prints each median and the median of the
per-round ratios (the figure that survives a drifting machine).
"""
import sys, time, warnings
import numpy as np
from sklearn.datasets import make_friedman1
from sklearn.neural_network import MLPRegressor
from skquad import QNNRegressor, RPQNNRegressor

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 7
dtype = sys.argv[2] if len(sys.argv) > 2 else "float64"
n, d, hidden = (int(v) for v in sys.argv[3:6]) if len(sys.argv) > 5 else (4000, 20, 100)
X, y = make_friedman1(n_samples=n, n_features=d, random_state=0)
X, y = X.astype(dtype), (y - y.mean()) / y.std()
epochs = 20
common = dict(hidden_layer_sizes=(hidden,), max_iter=epochs, batch_size=200, tol=0.0, n_iter_no_change=10**6,
              random_state=0)
makers = {"MLP": lambda: MLPRegressor(**common), "QNN": lambda: QNNRegressor(**common, device="cpu"),
          "RPQNN": lambda: RPQNNRegressor(**common, device="cpu")}
times = {k: [] for k in makers}
for _ in range(rounds):
    for name, make in makers.items():
        model = make()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = time.perf_counter(); model.fit(X, y); times[name].append((time.perf_counter() - t) / epochs)
base = np.array(times["MLP"])
print(f"{dtype} X{X.shape} hidden={hidden} batch=200 rounds={rounds}")
for name, v in times.items():
    v = np.array(v)
    print(f"{name:6s} epoch median {1e3 * np.median(v):.2f} ms  ratio (median of rounds) {np.median(v / base):.2f}"
          f"  all {np.round(v / base, 2).tolist()}")
