"""Programs whose arrays are built by list comprehensions, shared by ``test_comprehension_arrays``
and ``test_comprehensions`` (k-means as numba's own examples write it)."""

from __future__ import annotations

import math

import numpy as np


def kmeans(A, k, iterations, centroids):
    n, d = A.shape
    for _ in range(iterations):
        dist = np.array([[math.sqrt(np.sum((A[i, :] - centroids[j, :]) ** 2))
                          for j in range(k)] for i in range(n)])
        labels = np.array([dist[i, :].argmin() for i in range(n)])
        centroids = np.array([[np.sum(A[labels == i, j]) / np.sum(labels == i)
                               for j in range(d)] for i in range(k)])
    return centroids
