# One image for every Croupier service; docker-compose.yml picks the service with its command.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY baccarat ./baccarat
COPY contracts ./contracts
COPY services ./services
COPY croupier ./croupier
RUN pip install --no-cache-dir .
ENV KAFKA_BOOTSTRAP_SERVERS=kafka:9092
CMD ["croupier", "serve"]
